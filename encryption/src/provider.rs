//! The providers of an EncryptionConfiguration and the chain that combines them, as
//! kube-apiserver stores values (k8s.io/apiserver/pkg/storage/value): each key writes
//! `k8s:enc:<provider>:v1:<key name>:` followed by its ciphertext, so a stored value names the
//! key that reads it; the first provider's first key writes, every key reads.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use bytes::Bytes;
use rand::RngCore;
use storage::transform::{FromStorage, ValueTransformer};

/// The prefix every encrypted value starts with.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

type Aes192Gcm = aes_gcm::AesGcm<aes::Aes192, aes_gcm::aead::consts::U12>;

/// One key's cipher.
enum Cipher {
    Gcm128(Box<aes_gcm::Aes128Gcm>),
    Gcm192(Box<Aes192Gcm>),
    Gcm256(Box<aes_gcm::Aes256Gcm>),
    Cbc(Vec<u8>),
    SecretBox(Box<crypto_secretbox::XSalsa20Poly1305>),
    /// Stores values as they are.
    Identity,
}

const GCM_NONCE: usize = 12;
const CBC_IV: usize = 16;
const SECRETBOX_NONCE: usize = 24;

fn random<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    rand::rng().fill_bytes(&mut b);
    b
}

impl Cipher {
    fn gcm(key: &[u8]) -> Result<Cipher, String> {
        let bad = |_| "invalid AES key".to_string();
        Ok(match key.len() {
            16 => Cipher::Gcm128(Box::new(
                aes_gcm::Aes128Gcm::new_from_slice(key).map_err(bad)?,
            )),
            24 => Cipher::Gcm192(Box::new(Aes192Gcm::new_from_slice(key).map_err(bad)?)),
            32 => Cipher::Gcm256(Box::new(
                aes_gcm::Aes256Gcm::new_from_slice(key).map_err(bad)?,
            )),
            n => return Err(format!("invalid AES key length {n}")),
        })
    }

    /// kube's aesgcm: a random 12-byte nonce, then the sealed value, authenticated with the
    /// storage key (gcm.TransformToStorage).
    fn seal(&self, key: &str, plain: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Cipher::Gcm128(c) => gcm_seal(c.as_ref(), key, plain),
            Cipher::Gcm192(c) => gcm_seal(c.as_ref(), key, plain),
            Cipher::Gcm256(c) => gcm_seal(c.as_ref(), key, plain),
            Cipher::Cbc(k) => cbc_seal(k, plain),
            Cipher::SecretBox(c) => {
                let nonce = random::<SECRETBOX_NONCE>();
                let mut out = nonce.to_vec();
                out.extend(
                    c.encrypt((&nonce).into(), plain)
                        .map_err(|_| "secretbox: encryption failed".to_string())?,
                );
                Ok(out)
            }
            Cipher::Identity => Ok(plain.to_vec()),
        }
    }

    fn open(&self, key: &str, data: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Cipher::Gcm128(c) => gcm_open(c.as_ref(), key, data),
            Cipher::Gcm192(c) => gcm_open(c.as_ref(), key, data),
            Cipher::Gcm256(c) => gcm_open(c.as_ref(), key, data),
            Cipher::Cbc(k) => cbc_open(k, data),
            Cipher::SecretBox(c) => {
                if data.len() < SECRETBOX_NONCE {
                    return Err("the stored data was shorter than the required size".into());
                }
                let (nonce, sealed) = data.split_at(SECRETBOX_NONCE);
                let nonce: &[u8; SECRETBOX_NONCE] =
                    nonce.try_into().map_err(|_| "bad nonce".to_string())?;
                c.decrypt(nonce.into(), sealed)
                    .map_err(|_| "output array was not large enough for encryption".to_string())
            }
            Cipher::Identity => Ok(data.to_vec()),
        }
    }
}

fn gcm_seal<C: Aead>(c: &C, key: &str, plain: &[u8]) -> Result<Vec<u8>, String> {
    let nonce = random::<GCM_NONCE>();
    let mut out = nonce.to_vec();
    let sealed = c
        .encrypt(
            aes_gcm::Nonce::from_slice(&nonce),
            Payload {
                msg: plain,
                aad: key.as_bytes(),
            },
        )
        .map_err(|_| "cipher: encryption failed".to_string())?;
    out.extend(sealed);
    Ok(out)
}

fn gcm_open<C: Aead>(c: &C, key: &str, data: &[u8]) -> Result<Vec<u8>, String> {
    if data.len() < GCM_NONCE {
        return Err("the stored data was shorter than the required size".into());
    }
    let (nonce, sealed) = data.split_at(GCM_NONCE);
    c.decrypt(
        aes_gcm::Nonce::from_slice(nonce),
        Payload {
            msg: sealed,
            aad: key.as_bytes(),
        },
    )
    .map_err(|_| "cipher: message authentication failed".to_string())
}

type CbcEnc<A> = cbc::Encryptor<A>;
type CbcDec<A> = cbc::Decryptor<A>;

/// kube's aescbc: a random 16-byte IV, then the PKCS#7-padded value in CBC mode.
fn cbc_seal(k: &[u8], plain: &[u8]) -> Result<Vec<u8>, String> {
    use cbc::cipher::{BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
    let iv = random::<CBC_IV>();
    let bad = |_| "invalid AES key".to_string();
    let ct = match k.len() {
        16 => CbcEnc::<aes::Aes128>::new_from_slices(k, &iv)
            .map_err(bad)?
            .encrypt_padded_vec_mut::<Pkcs7>(plain),
        24 => CbcEnc::<aes::Aes192>::new_from_slices(k, &iv)
            .map_err(bad)?
            .encrypt_padded_vec_mut::<Pkcs7>(plain),
        _ => CbcEnc::<aes::Aes256>::new_from_slices(k, &iv)
            .map_err(bad)?
            .encrypt_padded_vec_mut::<Pkcs7>(plain),
    };
    let mut out = iv.to_vec();
    out.extend(ct);
    Ok(out)
}

fn cbc_open(k: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
    use cbc::cipher::{BlockDecryptMut, KeyIvInit, block_padding::Pkcs7};
    if data.len() < CBC_IV {
        return Err("the stored data was shorter than the required size".into());
    }
    let (iv, ct) = data.split_at(CBC_IV);
    if ct.len() % CBC_IV != 0 {
        return Err("the stored data is not a multiple of the block size".into());
    }
    let bad = |_| "invalid AES key".to_string();
    let pad = |_| "invalid padding on input".to_string();
    match k.len() {
        16 => CbcDec::<aes::Aes128>::new_from_slices(k, iv)
            .map_err(bad)?
            .decrypt_padded_vec_mut::<Pkcs7>(ct)
            .map_err(pad),
        24 => CbcDec::<aes::Aes192>::new_from_slices(k, iv)
            .map_err(bad)?
            .decrypt_padded_vec_mut::<Pkcs7>(ct)
            .map_err(pad),
        _ => CbcDec::<aes::Aes256>::new_from_slices(k, iv)
            .map_err(bad)?
            .decrypt_padded_vec_mut::<Pkcs7>(ct)
            .map_err(pad),
    }
}

/// Builds a key's cipher from its bytes.
type MakeCipher = fn(&[u8]) -> Result<Cipher, String>;

/// One key of one provider, with the prefix its values carry.
struct Prefixed {
    prefix: Vec<u8>,
    /// `aesgcm`, `aescbc`, `secretbox` or `identity`.
    provider: &'static str,
    key_name: String,
    cipher: Cipher,
}

/// A resource's providers in order (kube's `prefixTransformers`).
pub struct Chain {
    keys: Vec<Prefixed>,
}

impl Chain {
    /// Builds the chain of a validated `providers` list.
    pub fn new(providers: &[super::config::ProviderConfiguration]) -> Result<Chain, String> {
        use base64::Engine;
        let mut keys = vec![];
        for p in providers {
            let (name, list, make): (&'static str, _, MakeCipher) = if let Some(k) = &p.aesgcm {
                ("aesgcm", &k.keys, Cipher::gcm)
            } else if let Some(k) = &p.aescbc {
                ("aescbc", &k.keys, |k: &[u8]| Ok(Cipher::Cbc(k.to_vec())))
            } else if let Some(k) = &p.secretbox {
                ("secretbox", &k.keys, |k: &[u8]| {
                    crypto_secretbox::XSalsa20Poly1305::new_from_slice(k)
                        .map(|c| Cipher::SecretBox(Box::new(c)))
                        .map_err(|_| "invalid secretbox key".to_string())
                })
            } else {
                keys.push(Prefixed {
                    prefix: vec![],
                    provider: "identity",
                    key_name: String::new(),
                    cipher: Cipher::Identity,
                });
                continue;
            };
            for k in list {
                let secret = base64::engine::general_purpose::STANDARD
                    .decode(&k.secret)
                    .map_err(|e| format!("key {:?}: {e}", k.name))?;
                keys.push(Prefixed {
                    prefix: format!("k8s:enc:{name}:v1:{}:", k.name).into_bytes(),
                    provider: name,
                    key_name: k.name.clone(),
                    cipher: make(&secret)?,
                });
            }
        }
        if keys.is_empty() {
            return Err("no providers".into());
        }
        Ok(Chain { keys })
    }
}

impl ValueTransformer for Chain {
    // kube's prefixTransformers.TransformFromStorage: the first key whose prefix matches
    // reads; an error is kept and later matching keys tried; reading with any key but the
    // first is stale.
    fn transform_from_storage(&self, key: &str, stored: &Bytes) -> Result<FromStorage, String> {
        let mut errs: Vec<String> = vec![];
        for (i, k) in self.keys.iter().enumerate() {
            if !stored.starts_with(&k.prefix) {
                continue;
            }
            if matches!(k.cipher, Cipher::Identity) {
                // identity (the encrypt-check transformer) refuses encrypted data and lets
                // the next provider try.
                if stored.starts_with(ENCRYPTED_PREFIX) {
                    continue;
                }
                return Ok(FromStorage {
                    value: None,
                    stale: i != 0,
                });
            }
            match k.cipher.open(key, &stored[k.prefix.len()..]) {
                Ok(plain) => {
                    return Ok(FromStorage {
                        value: Some(plain.into()),
                        stale: i != 0,
                    });
                }
                Err(e) => errs.push(format!(
                    "failed to decrypt data with {} key {:?}: {e}",
                    k.provider, k.key_name
                )),
            }
        }
        match errs.len() {
            0 if stored.starts_with(ENCRYPTED_PREFIX) => Err(format!(
                "no matching prefix found: the data was written with {:?}, which is not in the encryption configuration",
                prefix_of(stored)
            )),
            0 => Err("no matching prefix found".into()),
            1 => Err(errs.remove(0)),
            _ => Err(format!("[{}]", errs.join(", "))),
        }
    }

    fn transform_to_storage(&self, key: &str, plain: &Bytes) -> Result<Bytes, String> {
        let k = &self.keys[0];
        if matches!(k.cipher, Cipher::Identity) {
            return Ok(plain.clone());
        }
        let sealed = k.cipher.seal(key, plain)?;
        let mut out = Vec::with_capacity(k.prefix.len() + sealed.len());
        out.extend_from_slice(&k.prefix);
        out.extend(sealed);
        Ok(out.into())
    }
}

/// The `k8s:enc:<provider>:v1:<key>:` prefix of an encrypted value.
fn prefix_of(stored: &[u8]) -> String {
    let mut colons = 0;
    let end = stored
        .iter()
        .position(|b| {
            colons += usize::from(*b == b':');
            colons == 5
        })
        .map_or(stored.len().min(64), |p| p + 1);
    String::from_utf8_lossy(&stored[..end]).into_owned()
}

/// Resources no configuration lists: values as they are, but encrypted data is an error
/// rather than garbage (kube's `identity.NewEncryptCheckTransformer`).
pub struct EncryptCheck;

impl ValueTransformer for EncryptCheck {
    fn transform_from_storage(&self, _key: &str, stored: &Bytes) -> Result<FromStorage, String> {
        if stored.starts_with(ENCRYPTED_PREFIX) {
            return Err(format!(
                "identity transformer tried to read encrypted data (written with {:?}); the resource is not in the encryption configuration",
                prefix_of(stored)
            ));
        }
        Ok(FromStorage {
            value: None,
            stale: false,
        })
    }

    fn transform_to_storage(&self, _key: &str, plain: &Bytes) -> Result<Bytes, String> {
        Ok(plain.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::parse;
    use super::*;

    fn chain(providers: &str) -> Chain {
        let c = parse(&format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n{providers}"
        ))
        .expect("valid");
        Chain::new(&c.resources[0].providers).expect("chain")
    }

    const K16: &str = "c2VjcmV0IGlzIHNlY3VyZQ==";
    const K24: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3";
    const K32: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    const KEY: &str = "/registry/secrets/default/s1";

    fn provider(name: &str, key_name: &str, secret: &str) -> String {
        format!("  - {name}:\n      keys:\n      - name: {key_name}\n        secret: {secret}\n")
    }

    #[test]
    fn every_provider_round_trips_and_hides_the_value() {
        let plain = Bytes::from_static(b"{\"data\":{\"password\":\"hunter2-hunter2\"}}");
        for (p, secret) in [
            ("aesgcm", K16),
            ("aesgcm", K24),
            ("aesgcm", K32),
            ("aescbc", K16),
            ("aescbc", K32),
            ("secretbox", K32),
        ] {
            let c = chain(&provider(p, "key1", secret));
            let stored = c.transform_to_storage(KEY, &plain).expect("seal");
            let prefix = format!("k8s:enc:{p}:v1:key1:");
            assert!(stored.starts_with(prefix.as_bytes()), "{p}");
            assert!(
                !stored.windows(7).any(|w| w == b"hunter2"),
                "{p}: plaintext stored"
            );
            // Random nonces: two writes differ.
            assert_ne!(
                stored,
                c.transform_to_storage(KEY, &plain).expect("seal"),
                "{p}"
            );
            let back = c.transform_from_storage(KEY, &stored).expect("open");
            assert_eq!(back.value.as_ref(), Some(&plain), "{p}");
            assert!(!back.stale);
        }
    }

    #[test]
    fn aesgcm_binds_the_value_to_its_key() {
        let c = chain(&provider("aesgcm", "key1", K32));
        let stored = c
            .transform_to_storage(KEY, &Bytes::from_static(b"x"))
            .expect("seal");
        let e = c
            .transform_from_storage("/registry/secrets/default/other", &stored)
            .err()
            .expect("moved value");
        assert_eq!(
            e,
            "failed to decrypt data with aesgcm key \"key1\": cipher: message authentication failed"
        );
    }

    #[test]
    fn rotation_reads_old_keys_as_stale_and_writes_the_first() {
        let old = chain(&provider("aescbc", "key1", K32));
        let stored_old = old
            .transform_to_storage(KEY, &Bytes::from_static(b"v"))
            .expect("seal");
        let rotated = chain(&format!(
            "{}{}",
            provider("secretbox", "key2", K32),
            provider("aescbc", "key1", K32)
        ));
        let r = rotated
            .transform_from_storage(KEY, &stored_old)
            .expect("old key reads");
        assert_eq!((r.value, r.stale), (Some(Bytes::from_static(b"v")), true));
        let fresh = rotated
            .transform_to_storage(KEY, &Bytes::from_static(b"v"))
            .expect("seal");
        assert!(fresh.starts_with(b"k8s:enc:secretbox:v1:key2:"));
        assert!(
            !rotated
                .transform_from_storage(KEY, &fresh)
                .expect("reads")
                .stale
        );
        // Identity last reads plain values, which are stale; identity first writes plain.
        let with_identity = chain(&format!(
            "{}  - identity: {{}}\n",
            provider("aesgcm", "k", K16)
        ));
        let r = with_identity
            .transform_from_storage(KEY, &Bytes::from_static(b"{}"))
            .expect("plain");
        assert!(r.value.is_none() && r.stale);
        let decrypting = chain(&format!(
            "  - identity: {{}}\n{}",
            provider("aescbc", "key1", K32)
        ));
        let r = decrypting
            .transform_from_storage(KEY, &stored_old)
            .expect("identity first still reads");
        assert_eq!((r.value, r.stale), (Some(Bytes::from_static(b"v")), true));
        assert_eq!(
            decrypting
                .transform_to_storage(KEY, &Bytes::from_static(b"v"))
                .expect("plain"),
            "v"
        );
    }

    #[test]
    fn wrong_or_missing_keys_are_clear_errors() {
        let sealing = chain(&provider("aescbc", "key1", K32));
        let seal = || {
            sealing
                .transform_to_storage(KEY, &Bytes::from_static(b"value"))
                .expect("seal")
        };
        let stored = seal();
        // aescbc authenticates nothing (as kube's): a wrong key fails only when the garbage it
        // decrypts to is not validly padded, which a random IV leaves to chance about once in
        // a couple of hundred values. It never yields the value; over 32 sealings it fails
        // with a clear error at least once (all 32 padded by chance: about 2^-250).
        let other = chain(&provider("aescbc", "key1", K16));
        let mut errors = Vec::new();
        for _ in 0..32 {
            match other.transform_from_storage(KEY, &seal()) {
                Ok(r) => assert_ne!(r.value, Some(Bytes::from_static(b"value"))),
                Err(e) => errors.push(e),
            }
        }
        let e = errors.first().expect("a wrong key fails");
        assert!(
            e.starts_with("failed to decrypt data with aescbc key \"key1\""),
            "{e}"
        );
        let missing = chain(&provider("aesgcm", "key9", K16));
        let e = missing
            .transform_from_storage(KEY, &stored)
            .err()
            .expect("no key");
        assert_eq!(
            e,
            "no matching prefix found: the data was written with \"k8s:enc:aescbc:v1:key1:\", which is not in the encryption configuration"
        );
        let e = EncryptCheck
            .transform_from_storage(KEY, &stored)
            .err()
            .expect("check");
        assert!(
            e.starts_with("identity transformer tried to read encrypted data"),
            "{e}"
        );
    }
}
