//! Service-account tokens: JWTs signed with the server's own key (ES256), with kube's claims
//! (k8s.io/kubernetes/pkg/serviceaccount/claims.go): issuer, audiences, expiry, and the
//! service account (plus an optional bound Pod, Secret or Node) they stand for. A token stops
//! working when its service account or bound object is deleted or replaced.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use rustls::pki_types::PrivatePkcs8KeyDer;
use rustls::pki_types::pem::PemObject;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AuthError, SERVICE_ACCOUNT_PREFIX, SERVICE_ACCOUNTS_GROUP, UserInfo};
use crate::object;
use crate::registry::Registry;
use crate::state::ApiState;

/// Clock skew tolerated on `exp` and `nbf`, as go-jose's default leeway.
const LEEWAY_SECONDS: u64 = 60;

/// The extra key kube records a token's ID under.
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

/// A reference to a named object with its uid.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ref {
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
}

/// The `kubernetes.io` private claim.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaims {
    /// The service account's namespace.
    pub namespace: String,
    /// The service account.
    pub serviceaccount: Ref,
    /// The Pod the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Ref>,
    /// The Secret the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<Ref>,
    /// The Node the token is bound to (or the Pod's node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Ref>,
}

/// The claims of a service-account token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Issuer.
    pub iss: String,
    /// Subject: `system:serviceaccount:NS:NAME`.
    pub sub: String,
    /// Audiences.
    pub aud: Vec<String>,
    /// Expiry (Unix seconds).
    pub exp: i64,
    /// Not before (Unix seconds).
    pub nbf: i64,
    /// Issued at (Unix seconds).
    pub iat: i64,
    /// Token ID.
    pub jti: String,
    /// kube's private claims.
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: KubernetesClaims,
}

/// What a new token is for.
#[derive(Clone, Debug, Default)]
pub struct TokenSpec {
    /// The service account's namespace.
    pub namespace: String,
    /// The service account.
    pub service_account: Ref,
    /// Audiences (empty: the server's audiences).
    pub audiences: Vec<String>,
    /// Lifetime in seconds.
    pub expiration_seconds: i64,
    /// A bound object: kind (`Pod`, `Secret` or `Node`) and reference.
    pub bound: Option<(String, Ref)>,
}

/// Issues and validates service-account tokens with the server's key.
pub struct ServiceAccountTokens {
    issuer: String,
    audiences: Vec<String>,
    encoding: EncodingKey,
    decoding: DecodingKey,
    key_id: String,
}

impl std::fmt::Debug for ServiceAccountTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountTokens")
            .field("issuer", &self.issuer)
            .field("audiences", &self.audiences)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// The DER prefix of a SubjectPublicKeyInfo holding an uncompressed P-256 point.
const P256_SPKI_PREFIX: &[u8] = &[
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

impl ServiceAccountTokens {
    /// From the signing key (PKCS#8 PEM, ECDSA P-256), the issuer and accepted audiences.
    pub fn new(
        key_pem: &str,
        issuer: String,
        audiences: Vec<String>,
    ) -> Result<ServiceAccountTokens, AuthError> {
        super::jwt_ring::install();
        let der = PrivatePkcs8KeyDer::from_pem_slice(key_pem.as_bytes())
            .map_err(|e| AuthError::ServiceAccountKey(format!("not a PKCS#8 PEM key: {e}")))?;
        let pair = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            der.secret_pkcs8_der(),
            &ring::rand::SystemRandom::new(),
        )
        .map_err(|e| AuthError::ServiceAccountKey(format!("not an ECDSA P-256 key: {e}")))?;
        let point = pair.public_key().as_ref().to_vec();
        // kube's key ID: the URL-safe SHA-256 of the DER public key.
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(&point);
        let key_id = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, &spki));
        Ok(ServiceAccountTokens {
            issuer,
            audiences,
            encoding: EncodingKey::from_ec_der(der.secret_pkcs8_der()),
            decoding: DecodingKey::from_ec_der(&point),
            key_id,
        })
    }

    /// The issuer.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The audiences the server accepts.
    pub fn audiences(&self) -> &[String] {
        &self.audiences
    }

    /// Signs arbitrary claims (tests use it to build expired or foreign-audience tokens).
    pub fn sign(&self, claims: &Claims) -> Result<String, String> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.key_id.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).map_err(|e| e.to_string())
    }

    /// Issues a token; returns it with its expiry (Unix seconds).
    pub fn issue(&self, spec: &TokenSpec) -> Result<(String, i64), String> {
        let now = jiff::Timestamp::now().as_second();
        let exp = now + spec.expiration_seconds;
        let mut k8s = KubernetesClaims {
            namespace: spec.namespace.clone(),
            serviceaccount: spec.service_account.clone(),
            ..Default::default()
        };
        match &spec.bound {
            Some((kind, r)) if kind == "Pod" => k8s.pod = Some(r.clone()),
            Some((kind, r)) if kind == "Secret" => k8s.secret = Some(r.clone()),
            Some((kind, r)) if kind == "Node" => k8s.node = Some(r.clone()),
            Some((kind, _)) => return Err(format!("cannot bind a token to a {kind}")),
            None => {}
        }
        let claims = Claims {
            iss: self.issuer.clone(),
            sub: format!(
                "{SERVICE_ACCOUNT_PREFIX}{}:{}",
                spec.namespace, spec.service_account.name
            ),
            aud: if spec.audiences.is_empty() {
                self.audiences.clone()
            } else {
                spec.audiences.clone()
            },
            exp,
            nbf: now,
            iat: now,
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes: k8s,
        };
        Ok((self.sign(&claims)?, exp))
    }

    /// Checks a token's signature, issuer, times and audiences (one of `audiences` must be
    /// in the token; empty: the server's). Returns the claims and the matching audiences.
    pub fn validate(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<(Claims, Vec<String>), String> {
        let mut v = Validation::new(Algorithm::ES256);
        v.set_issuer(&[self.issuer.as_str()]);
        v.set_required_spec_claims(&["exp", "iss", "sub", "aud"]);
        v.validate_nbf = true;
        v.leeway = LEEWAY_SECONDS;
        // Audiences are intersected below (TokenReview asks for its own).
        v.validate_aud = false;
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &v)
            .map_err(|e| format!("invalid service-account token: {e}"))?;
        let wanted = if audiences.is_empty() {
            &self.audiences
        } else {
            audiences
        };
        let matched: Vec<String> = wanted
            .iter()
            .filter(|a| data.claims.aud.contains(a))
            .cloned()
            .collect();
        if matched.is_empty() {
            return Err("invalid service-account token: token audiences are not accepted".into());
        }
        let k = &data.claims.kubernetes;
        let expected_sub = format!(
            "{SERVICE_ACCOUNT_PREFIX}{}:{}",
            k.namespace, k.serviceaccount.name
        );
        if k.namespace.is_empty()
            || k.serviceaccount.name.is_empty()
            || data.claims.sub != expected_sub
        {
            return Err("invalid service-account token: malformed claims".into());
        }
        Ok((data.claims, matched))
    }
}

/// The issuer of legacy (Secret-based, non-expiring) service-account tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

/// The claims of a legacy service-account token (kube's `legacyPrivateClaims`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegacyClaims {
    /// Always [`LEGACY_ISSUER`].
    pub iss: String,
    /// Subject: `system:serviceaccount:NS:NAME`.
    pub sub: String,
    /// The service account's namespace.
    #[serde(rename = "kubernetes.io/serviceaccount/namespace")]
    pub namespace: String,
    /// The Secret holding the token.
    #[serde(rename = "kubernetes.io/serviceaccount/secret.name")]
    pub secret_name: String,
    /// The service account.
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.name")]
    pub service_account_name: String,
    /// The service account's uid.
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.uid")]
    pub service_account_uid: String,
}

impl ServiceAccountTokens {
    /// Issues a legacy token for a `kubernetes.io/service-account-token` Secret (kube's
    /// tokens controller does): no expiry, valid while the Secret holds it and the account
    /// exists.
    pub fn issue_legacy(
        &self,
        namespace: &str,
        service_account: &Ref,
        secret_name: &str,
    ) -> Result<String, String> {
        let claims = LegacyClaims {
            iss: LEGACY_ISSUER.into(),
            sub: format!(
                "{SERVICE_ACCOUNT_PREFIX}{namespace}:{}",
                service_account.name
            ),
            namespace: namespace.into(),
            secret_name: secret_name.into(),
            service_account_name: service_account.name.clone(),
            service_account_uid: service_account.uid.clone(),
        };
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.key_id.clone());
        jsonwebtoken::encode(&header, &claims, &self.encoding).map_err(|e| e.to_string())
    }

    /// Checks a legacy token's signature and claims.
    pub fn validate_legacy(&self, token: &str) -> Result<LegacyClaims, String> {
        let mut v = Validation::new(Algorithm::ES256);
        v.set_issuer(&[LEGACY_ISSUER]);
        v.set_required_spec_claims(&["iss", "sub"]);
        v.validate_exp = false;
        v.validate_aud = false;
        let c = jsonwebtoken::decode::<LegacyClaims>(token, &self.decoding, &v)
            .map_err(|e| format!("invalid service-account token: {e}"))?
            .claims;
        let expected = format!(
            "{SERVICE_ACCOUNT_PREFIX}{}:{}",
            c.namespace, c.service_account_name
        );
        if c.namespace.is_empty() || c.secret_name.is_empty() || c.sub != expected {
            return Err("invalid service-account token: malformed claims".into());
        }
        Ok(c)
    }
}

/// The issuer a token claims, read without verifying it (to pick the validator).
pub fn unverified_issuer(token: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Iss {
        iss: String,
    }
    jsonwebtoken::dangerous::insecure_decode_claims::<Iss>(token)
        .ok()
        .map(|c| c.iss)
}

/// The user a legacy token stands for, once its Secret still holds it and its account
/// exists with the same uid (kube's legacy validator with service-account lookup).
pub async fn legacy_user_for(
    state: &ApiState,
    token: &str,
    claims: &LegacyClaims,
) -> Result<UserInfo, String> {
    let secret = lookup(state, "secrets", &claims.namespace, &claims.secret_name)
        .await?
        .ok_or_else(|| {
            format!(
                "secret \"{}\" holding the token is gone",
                claims.secret_name
            )
        })?;
    let held = secret
        .pointer("/data/token")
        .and_then(Value::as_str)
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok());
    if held.as_deref() != Some(token.as_bytes()) {
        return Err("the token no longer matches its secret".into());
    }
    if object::is_terminating(&secret) {
        return Err("the token's secret is being deleted".into());
    }
    let sa = Ref {
        name: claims.service_account_name.clone(),
        uid: claims.service_account_uid.clone(),
    };
    check_ref(
        state,
        "ServiceAccount",
        "serviceaccounts",
        &claims.namespace,
        &sa,
    )
    .await?;
    Ok(UserInfo {
        name: claims.sub.clone(),
        uid: sa.uid,
        groups: vec![
            SERVICE_ACCOUNTS_GROUP.to_string(),
            format!("{SERVICE_ACCOUNTS_GROUP}:{}", claims.namespace),
            super::AUTHENTICATED_GROUP.to_string(),
        ],
        extra: BTreeMap::new(),
    })
}

/// Reads an object from the watch cache, or from storage when the cache has not seen it yet
/// (kube's clientGetter falls back to a live lookup the same way).
pub(crate) async fn lookup(
    state: &ApiState,
    resource: &str,
    namespace: &str,
    name: &str,
) -> Result<Option<Value>, String> {
    let snapshot = state.catalog.snapshot();
    let Some(def) = snapshot.get("", "v1", resource).cloned() else {
        return Err(format!("{resource} are not served"));
    };
    let ns = if def.namespaced { namespace } else { "" };
    if let (Ok(cache), Some(key)) = (state.cache(&def), def.key(ns, name))
        && let Some(o) = cache.get(&key)
    {
        return Ok(Some(o.value()));
    }
    match Registry::new(state, def).get(ns, name).await {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.code == 404 => Ok(None),
        Err(e) => Err(e.message),
    }
}

async fn check_ref(
    state: &ApiState,
    kind: &str,
    resource: &str,
    namespace: &str,
    r: &Ref,
) -> Result<Value, String> {
    let obj = lookup(state, resource, namespace, &r.name)
        .await?
        .ok_or_else(|| format!("{kind} \"{}\" referenced by the token is gone", r.name))?;
    if object::uid(&obj) != r.uid {
        return Err(format!(
            "{kind} UID ({}) does not match the token's ({})",
            object::uid(&obj),
            r.uid
        ));
    }
    if object::is_terminating(&obj) {
        return Err(format!(
            "{kind} \"{}\" referenced by the token is being deleted",
            r.name
        ));
    }
    Ok(obj)
}

/// The user a validated token stands for, once its service account (and bound object) are
/// confirmed to still exist with the same UIDs (kube's `validator.Validate`).
pub async fn user_for(state: &ApiState, claims: &Claims) -> Result<UserInfo, String> {
    let k = &claims.kubernetes;
    check_ref(
        state,
        "ServiceAccount",
        "serviceaccounts",
        &k.namespace,
        &k.serviceaccount,
    )
    .await?;
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if let Some(p) = &k.pod {
        check_ref(state, "Pod", "pods", &k.namespace, p).await?;
        extra.insert(
            "authentication.kubernetes.io/pod-name".into(),
            vec![p.name.clone()],
        );
        extra.insert(
            "authentication.kubernetes.io/pod-uid".into(),
            vec![p.uid.clone()],
        );
    }
    if let Some(s) = &k.secret {
        check_ref(state, "Secret", "secrets", &k.namespace, s).await?;
    }
    if let Some(n) = &k.node {
        // A node recorded beside a pod is informational; only a token bound to the node
        // itself dies with it.
        if k.pod.is_none() {
            check_ref(state, "Node", "nodes", "", n).await?;
        }
        extra.insert(
            "authentication.kubernetes.io/node-name".into(),
            vec![n.name.clone()],
        );
        extra.insert(
            "authentication.kubernetes.io/node-uid".into(),
            vec![n.uid.clone()],
        );
    }
    if !claims.jti.is_empty() {
        extra.insert(
            CREDENTIAL_ID_KEY.into(),
            vec![format!("JTI={}", claims.jti)],
        );
    }
    Ok(UserInfo {
        name: claims.sub.clone(),
        uid: k.serviceaccount.uid.clone(),
        groups: vec![
            SERVICE_ACCOUNTS_GROUP.to_string(),
            format!("{SERVICE_ACCOUNTS_GROUP}:{}", k.namespace),
            super::AUTHENTICATED_GROUP.to_string(),
        ],
        extra,
    })
}

/// Splits `system:serviceaccount:NS:NAME` into namespace and name.
pub fn split_username(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> ServiceAccountTokens {
        let key = rcgen_key();
        ServiceAccountTokens::new(
            &key,
            "https://issuer.test".into(),
            vec!["https://issuer.test".into()],
        )
        .unwrap()
    }

    fn rcgen_key() -> String {
        let rng = ring::rand::SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(doc.as_ref());
        format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n")
    }

    fn spec() -> TokenSpec {
        TokenSpec {
            namespace: "ns1".into(),
            service_account: Ref {
                name: "robot".into(),
                uid: "u-1".into(),
            },
            expiration_seconds: 600,
            ..Default::default()
        }
    }

    #[test]
    fn issue_and_validate() {
        let t = tokens();
        let (tok, exp) = t.issue(&spec()).unwrap();
        assert!(exp > jiff::Timestamp::now().as_second());
        let (claims, aud) = t.validate(&tok, &[]).unwrap();
        assert_eq!(claims.sub, "system:serviceaccount:ns1:robot");
        assert_eq!(claims.kubernetes.serviceaccount.uid, "u-1");
        assert_eq!(aud, vec!["https://issuer.test"]);
        let header = jsonwebtoken::decode_header(&tok).unwrap();
        assert_eq!(header.alg, Algorithm::ES256);
        assert!(header.kid.is_some());
    }

    #[test]
    fn refuses_bad_tokens() {
        let t = tokens();
        let (tok, _) = t.issue(&spec()).unwrap();
        // A changed payload breaks the signature.
        let parts: Vec<&str> = tok.split('.').collect();
        let mut payload: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        payload["kubernetes.io"]["serviceaccount"]["name"] = "admin".into();
        payload["sub"] = "system:serviceaccount:ns1:admin".into();
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&payload).unwrap()),
            parts[2]
        );
        assert!(t.validate(&forged, &[]).is_err());
        // Another key.
        let other = tokens();
        assert!(other.validate(&tok, &[]).is_err());
        // Expired beyond the leeway.
        let now = jiff::Timestamp::now().as_second();
        let mut claims = t.validate(&tok, &[]).unwrap().0;
        claims.exp = now - 120;
        claims.nbf = now - 1000;
        claims.iat = now - 1000;
        assert!(t.validate(&t.sign(&claims).unwrap(), &[]).is_err());
        // Another audience.
        let mut s = spec();
        s.audiences = vec!["vault".into()];
        let (aud_tok, _) = t.issue(&s).unwrap();
        assert!(t.validate(&aud_tok, &[]).is_err());
        assert_eq!(
            t.validate(&aud_tok, &["vault".into()]).unwrap().1,
            vec!["vault"]
        );
        // Another issuer.
        let mut claims = t.validate(&tok, &[]).unwrap().0;
        claims.iss = "https://elsewhere".into();
        assert!(t.validate(&t.sign(&claims).unwrap(), &[]).is_err());
        // A subject that disagrees with the private claims.
        let mut claims = t.validate(&tok, &[]).unwrap().0;
        claims.sub = "system:serviceaccount:kube-system:admin".into();
        assert!(t.validate(&t.sign(&claims).unwrap(), &[]).is_err());
        // Unsigned ("none") and garbage.
        let none = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#),
            parts[1]
        );
        assert!(t.validate(&none, &[]).is_err());
        assert!(t.validate("not-a-jwt", &[]).is_err());
        assert!(t.validate("", &[]).is_err());
    }

    #[test]
    fn legacy_tokens() {
        let t = tokens();
        let sa = Ref {
            name: "robot".into(),
            uid: "u-1".into(),
        };
        let tok = t.issue_legacy("ns1", &sa, "robot-token").unwrap();
        assert_eq!(unverified_issuer(&tok).as_deref(), Some(LEGACY_ISSUER));
        let c = t.validate_legacy(&tok).unwrap();
        assert_eq!(c.sub, "system:serviceaccount:ns1:robot");
        assert_eq!(c.secret_name, "robot-token");
        assert_eq!(c.service_account_uid, "u-1");
        // Neither validator accepts the other's tokens.
        assert!(t.validate(&tok, &[]).is_err());
        let (bound, _) = t.issue(&spec()).unwrap();
        assert!(t.validate_legacy(&bound).is_err());
        assert!(tokens().validate_legacy(&tok).is_err(), "another key");
        assert_eq!(unverified_issuer("garbage"), None);
    }

    #[test]
    fn usernames() {
        assert_eq!(
            split_username("system:serviceaccount:ns:sa"),
            Some(("ns", "sa"))
        );
        for bad in [
            "system:serviceaccount:ns",
            "alice",
            "system:serviceaccount::x",
            "system:serviceaccount:a:b:c",
        ] {
            assert_eq!(split_username(bad), None, "{bad}");
        }
    }

    #[test]
    fn non_ec_keys_are_refused() {
        assert!(ServiceAccountTokens::new("garbage", "i".into(), vec![]).is_err());
    }
}
