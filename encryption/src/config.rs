//! The EncryptionConfiguration file (`--encryption-provider-config`,
//! apiserver.config.k8s.io/v1) and its validation, worded as kube-apiserver's
//! (k8s.io/apiserver/pkg/apis/apiserver/validation/validation_encryption.go).

use base64::Engine;
use serde::Deserialize;

/// The file's API version.
pub const API_VERSION: &str = "apiserver.config.k8s.io/v1";
/// The file's kind.
pub const KIND: &str = "EncryptionConfiguration";

/// An `EncryptionConfiguration`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EncryptionConfiguration {
    /// `apiserver.config.k8s.io/v1`.
    pub api_version: Option<String>,
    /// `EncryptionConfiguration`.
    pub kind: Option<String>,
    /// Which resources use which providers.
    #[serde(default)]
    pub resources: Vec<ResourceConfiguration>,
}

/// One `resources` entry: resources and the providers that store them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceConfiguration {
    /// `secrets`, `deployments.apps`, `*.apps`, `*.` or `*.*`.
    #[serde(default)]
    pub resources: Vec<String>,
    /// The first writes; all read.
    #[serde(default)]
    pub providers: Vec<ProviderConfiguration>,
}

/// One provider: exactly one member set.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfiguration {
    /// AES-GCM with random nonces.
    pub aesgcm: Option<KeysConfiguration>,
    /// AES-CBC with PKCS#7 padding.
    pub aescbc: Option<KeysConfiguration>,
    /// XSalsa20-Poly1305 (NaCl secretbox).
    pub secretbox: Option<KeysConfiguration>,
    /// No encryption.
    pub identity: Option<IdentityConfiguration>,
    /// An external KMS plugin: refused (no plugin transport here).
    pub kms: Option<serde_json::Value>,
}

/// `identity: {}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityConfiguration {}

/// A provider's keys.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeysConfiguration {
    /// The first encrypts; all decrypt.
    #[serde(default)]
    pub keys: Vec<Key>,
}

/// A named key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Key {
    /// Written into each value's prefix.
    #[serde(default)]
    pub name: String,
    /// The key, base64.
    #[serde(default)]
    pub secret: String,
}

/// AES key lengths (crypto/aes.NewCipher).
pub const AES_KEY_SIZES: &[usize] = &[16, 24, 32];
/// secretbox's key length.
pub const SECRETBOX_KEY_SIZES: &[usize] = &[32];

/// A group and resource as written in the file (apimachinery's `ParseGroupResource`: the
/// resource up to the first dot, the group after it).
pub fn parse_group_resource(s: &str) -> (String, String) {
    match s.split_once('.') {
        Some((resource, group)) => (group.to_string(), resource.to_string()),
        None => (String::new(), s.to_string()),
    }
}

/// Go's `%#v` of a string slice, as field.Invalid prints one.
fn go_strings(v: &[String]) -> String {
    let quoted: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

fn required(path: &str, msg: &str) -> String {
    format!("{path}: Required value: {msg}")
}

fn invalid(path: &str, value: &str, msg: &str) -> String {
    format!("{path}: Invalid value: {value}: {msg}")
}

/// The errors of a configuration (kube's `ValidateEncryptionConfiguration`), plus the refusal
/// of KMS providers, which this server cannot reach.
pub fn validate(c: &EncryptionConfiguration) -> Vec<String> {
    let mut errs = vec![];
    if c.resources.is_empty() {
        errs.push(required("resources", "at least one resources is required"));
        return errs;
    }
    for (i, conf) in c.resources.iter().enumerate() {
        let r = format!("resources[{i}].resources");
        let p = format!("resources[{i}].providers");
        if conf.resources.is_empty() {
            errs.push(required(&r, &format!("at least one {r} is required")));
        }
        validate_overlap(&conf.resources, &r, &mut errs);
        validate_names(&conf.resources, &r, &mut errs);
        if conf.providers.is_empty() {
            errs.push(required(&p, &format!("at least one {p} is required")));
        }
        for (j, provider) in conf.providers.iter().enumerate() {
            let path = format!("{p}[{j}]");
            let found = [
                provider.kms.is_some(),
                provider.aesgcm.is_some(),
                provider.aescbc.is_some(),
                provider.secretbox.is_some(),
                provider.identity.is_some(),
            ]
            .iter()
            .filter(|f| **f)
            .count();
            if found == 0 {
                errs.push(invalid(
                    &path,
                    "{}",
                    "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity",
                ));
                continue;
            }
            if found > 1 {
                errs.push(invalid(
                    &path,
                    "{...}",
                    "more than one provider specified in a single element, should split into different list elements",
                ));
                continue;
            }
            if provider.kms.is_some() {
                errs.push(format!(
                    "{path}.kms: Forbidden: KMS providers are not supported by karmada-rs (no KMS plugin can be reached); use aesgcm, aescbc or secretbox"
                ));
            } else if let Some(k) = &provider.aesgcm {
                validate_keys(
                    &k.keys,
                    &format!("{path}.aesgcm.keys"),
                    AES_KEY_SIZES,
                    &mut errs,
                );
            } else if let Some(k) = &provider.aescbc {
                validate_keys(
                    &k.keys,
                    &format!("{path}.aescbc.keys"),
                    AES_KEY_SIZES,
                    &mut errs,
                );
            } else if let Some(k) = &provider.secretbox {
                validate_keys(
                    &k.keys,
                    &format!("{path}.secretbox.keys"),
                    SECRETBOX_KEY_SIZES,
                    &mut errs,
                );
            }
        }
    }
    errs
}

/// kube's `validateResourceOverlap`: duplicates, and wildcards masking other entries.
fn validate_overlap(resources: &[String], path: &str, errs: &mut Vec<String>) {
    if resources.len() < 2 {
        return;
    }
    let parsed: Vec<(String, String)> = resources.iter().map(|r| parse_group_resource(r)).collect();
    let (mut duplicate, mut overlap) = (false, false);
    for (i, r1) in parsed.iter().enumerate() {
        for (j, r2) in parsed.iter().enumerate() {
            if i == j {
                continue;
            }
            if r1 == r2 && !duplicate {
                duplicate = true;
                continue;
            }
            if overlap {
                continue;
            }
            if r1.0 == "*" && r1.1 == "*" {
                overlap = true;
                continue;
            }
            if r1.0 != r2.0 {
                continue;
            }
            if r1.1 == "*" || r2.1 == "*" {
                overlap = true;
            }
        }
    }
    if duplicate {
        errs.push(invalid(
            path,
            &go_strings(resources),
            "the same resource cannot be specified multiple times",
        ));
    }
    if overlap {
        errs.push(invalid(
            path,
            &go_strings(resources),
            "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked",
        ));
    }
}

/// kube's `validateResourceNames`.
fn validate_names(resources: &[String], path: &str, errs: &mut Vec<String>) {
    for (j, res) in resources.iter().enumerate() {
        let jj = format!("{path}[{j}]");
        let value = format!("{res:?}");
        let (group, resource) = parse_group_resource(res);
        let msg = if res.to_lowercase() != *res {
            "resource name should not contain capital letters"
        } else if res == "*" {
            "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
        } else if matches!(
            res.as_str(),
            "apiserveripinfo" | "serviceipallocations" | "servicenodeportallocations"
        ) {
            "resources which do not have REST API/s cannot be encrypted"
        } else if group == "events.k8s.io" {
            "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"
        } else if group == "extensions" {
            "'extensions' group has been removed and cannot be used for encryption"
        } else if group == "*" && resource != "*" {
            "encrypting the same resource across groups is not supported"
        } else {
            continue;
        };
        errs.push(invalid(&jj, &value, msg));
    }
}

/// kube's `validateKeys`.
fn validate_keys(keys: &[Key], path: &str, sizes: &[usize], errs: &mut Vec<String>) {
    if keys.is_empty() {
        errs.push(required(path, "at least one keys is required"));
        return;
    }
    for (i, key) in keys.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if key.name.is_empty() {
            errs.push(required(
                &format!("{at}.name"),
                "name is a mandatory field for a key",
            ));
        }
        if key.secret.is_empty() {
            errs.push(required(
                &format!("{at}.secret"),
                "secret is a mandatory field for a key",
            ));
            continue;
        }
        match base64::engine::general_purpose::STANDARD.decode(&key.secret) {
            Err(_) => errs.push(invalid(
                &format!("{at}.secret"),
                "\"REDACTED\"",
                "secrets must be base64 encoded",
            )),
            Ok(secret) if !sizes.contains(&secret.len()) => {
                let expected: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
                errs.push(invalid(
                    &format!("{at}.secret"),
                    "\"REDACTED\"",
                    &format!(
                        "secret is not of the expected length, got {}, expected one of [{}]",
                        secret.len(),
                        expected.join(" ")
                    ),
                ));
            }
            Ok(_) => {}
        }
    }
}

/// Reads and validates a configuration file's text; errors are worded as kube-apiserver's
/// `loadConfig` (`error while parsing file: ...`, several errors in brackets).
pub fn parse(text: &str) -> Result<EncryptionConfiguration, String> {
    let c: EncryptionConfiguration = serde_yaml::from_str(text)
        .map_err(|e| format!("error decoding encryption provider configuration file: {e}"))?;
    match (c.api_version.as_deref(), c.kind.as_deref()) {
        (Some(API_VERSION), Some(KIND)) => {}
        (v, k) => {
            return Err(format!(
                "error decoding encryption provider configuration file: expected apiVersion {API_VERSION:?} and kind {KIND:?}, got apiVersion {:?} and kind {:?}",
                v.unwrap_or(""),
                k.unwrap_or("")
            ));
        }
    }
    let errs = validate(&c);
    match errs.len() {
        0 => Ok(c),
        1 => Err(format!("error while parsing file: {}", errs[0])),
        _ => Err(format!("error while parsing file: [{}]", errs.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY16: &str = "c2VjcmV0IGlzIHNlY3VyZQ==";

    fn doc(resources: &str) -> String {
        format!("apiVersion: {API_VERSION}\nkind: {KIND}\nresources:\n{resources}")
    }

    #[test]
    fn a_valid_file_parses() {
        let c = parse(&doc(&format!(
            "- resources: [secrets, configmaps]\n  providers:\n  - aesgcm:\n      keys:\n      - name: key1\n        secret: {KEY16}\n  - identity: {{}}\n"
        )))
        .expect("valid");
        assert_eq!(c.resources[0].providers.len(), 2);
    }

    #[test]
    fn key_errors_are_worded_as_kube() {
        let e = parse(&doc(
            "- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n      - name: key1\n        secret: c2hvcnQ=\n",
        ))
        .expect_err("short key");
        assert_eq!(
            e,
            "error while parsing file: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5, expected one of [16 24 32]"
        );
        let e = parse(&doc(
            "- resources: [secrets]\n  providers:\n  - secretbox:\n      keys:\n      - secret: '!!'\n",
        ))
        .expect_err("bad key");
        assert_eq!(
            e,
            "error while parsing file: [resources[0].providers[0].secretbox.keys[0].name: Required value: name is a mandatory field for a key, resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": secrets must be base64 encoded]"
        );
    }

    #[test]
    fn resource_lists_are_checked() {
        let e = parse(&doc(
            "- resources: [secrets, '*.']\n  providers:\n  - identity: {}\n",
        ))
        .expect_err("overlap");
        assert!(e.ends_with("Invalid value: []string{\"secrets\", \"*.\"}: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"), "{e}");
        let e =
            parse(&doc("- resources: ['*']\n  providers:\n  - identity: {}\n")).expect_err("star");
        assert!(e.contains("use '*.' to encrypt all the resources"), "{e}");
        let e = parse(&doc(
            "- resources: [Secrets]\n  providers:\n  - identity: {}\n",
        ))
        .expect_err("capital");
        assert!(
            e.contains("resource name should not contain capital letters"),
            "{e}"
        );
        let e = parse(&doc("- resources: [secrets]\n  providers: []\n")).expect_err("none");
        assert_eq!(
            e,
            "error while parsing file: resources[0].providers: Required value: at least one resources[0].providers is required"
        );
    }

    #[test]
    fn kms_is_refused_and_unknown_fields_are_errors() {
        let e = parse(&doc(
            "- resources: [secrets]\n  providers:\n  - kms:\n      name: k\n      endpoint: unix:///tmp/k.sock\n",
        ))
        .expect_err("kms");
        assert!(
            e.contains("resources[0].providers[0].kms: Forbidden: KMS providers are not supported"),
            "{e}"
        );
        let e = parse(&doc(
            "- resources: [secrets]\n  providers:\n  - aesgcm:\n      key: []\n",
        ))
        .expect_err("unknown");
        assert!(e.contains("unknown field `key`"), "{e}");
        let e = parse("kind: Foo\nresources: []\n").expect_err("kind");
        assert!(e.contains("expected apiVersion"), "{e}");
    }
}
