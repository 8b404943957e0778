//! A `jsonwebtoken` crypto provider over ring (already linked for TLS), limited to ES256:
//! the algorithm of the server's service-account key. Any other algorithm is refused as
//! invalid, never trusted.

use std::sync::Once;

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{Error, ErrorKind};
use jsonwebtoken::signature::{self, Signer, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, EncodingKey};
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, UnparsedPublicKey,
};

static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: new_signer,
    verifier_factory: new_verifier,
    // JWK helpers are never used: keys come from the PKI, not from JWKs.
    key_utils: KeyUtils::new_unimplemented(),
};

/// Installs the provider for the process (once; a provider installed before is kept).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = PROVIDER.install_default();
    });
}

fn new_signer(alg: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>, Error> {
    if *alg != Algorithm::ES256 || key.family() != AlgorithmFamily::Ec {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    let pair = EcdsaKeyPair::from_pkcs8(
        &ECDSA_P256_SHA256_FIXED_SIGNING,
        key.as_bytes(),
        &SystemRandom::new(),
    )
    .map_err(|_| ErrorKind::InvalidEcdsaKey)?;
    Ok(Box::new(Es256Signer(pair)))
}

fn new_verifier(alg: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>, Error> {
    if *alg != Algorithm::ES256 || key.family() != AlgorithmFamily::Ec {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    Ok(Box::new(Es256Verifier(key.try_get_as_bytes()?.to_vec())))
}

struct Es256Signer(EcdsaKeyPair);

impl Signer<Vec<u8>> for Es256Signer {
    fn try_sign(&self, msg: &[u8]) -> Result<Vec<u8>, signature::Error> {
        self.0
            .sign(&SystemRandom::new(), msg)
            .map(|s| s.as_ref().to_vec())
            .map_err(|_| signature::Error::new())
    }
}

impl JwtSigner for Es256Signer {
    fn algorithm(&self) -> Algorithm {
        Algorithm::ES256
    }
}

/// The uncompressed SEC1 public point.
struct Es256Verifier(Vec<u8>);

impl Verifier<Vec<u8>> for Es256Verifier {
    fn verify(&self, msg: &[u8], sig: &Vec<u8>) -> Result<(), signature::Error> {
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &self.0)
            .verify(msg, sig)
            .map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for Es256Verifier {
    fn algorithm(&self) -> Algorithm {
        Algorithm::ES256
    }
}
