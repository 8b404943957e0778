//! Container image references and the image overrider (Karmada `imageparser` on top of
//! `github.com/distribution/reference`, and `overridemanager/imageoverride.go`).

use std::sync::LazyLock;

use karmada_api::policy::v1alpha1::{ImageComponent, ImageOverrider, OverriderOperator};
use regex::Regex;

/// The grammar of `reference.ReferenceRegexp`: name, optional tag, optional digest.
static REFERENCE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let alphanumeric = "[a-z0-9]+";
    let separator = "(?:[._]|__|[-]+)";
    let path_component = format!("{alphanumeric}(?:{separator}{alphanumeric})*");
    let domain_component = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
    let domain_name = format!(r"{domain_component}(?:\.{domain_component})*");
    let host = format!(r"(?:{domain_name}|\[(?:[a-fA-F0-9:]+)\])");
    let domain_and_port = format!("{host}(?::[0-9]+)?");
    let remote_name = format!("{path_component}(?:/{path_component})*");
    let name = format!("(?:{domain_and_port}/)?{remote_name}");
    let tag = TAG_PATTERN;
    let digest = DIGEST_PATTERN;
    Regex::new(&format!("^({name})(?::({tag}))?(?:@({digest}))?$")).ok()
});

const TAG_PATTERN: &str = "[0-9A-Za-z_][0-9A-Za-z_.-]{0,127}";
const DIGEST_PATTERN: &str =
    "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}";

static ANCHORED_TAG: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(&format!("^{TAG_PATTERN}$")).ok());
static ANCHORED_DIGEST: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(&format!("^{DIGEST_PATTERN}$")).ok());

fn matches(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

/// The longest repository path a reference may have.
const NAME_TOTAL_LENGTH_MAX: usize = 255;

/// An image reference split the way Karmada's image overrider edits it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ImageComponents {
    hostname: String,
    repository: String,
    tag: String,
    digest: String,
}

/// Validates a digest the way `go-digest` does with sha256/sha384/sha512 registered.
fn valid_digest(digest: &str) -> bool {
    let Some((algorithm, encoded)) = digest.split_once(':') else {
        return false;
    };
    let len = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    encoded.len() == len
        && encoded
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl ImageComponents {
    /// Parses a reference (`imageparser.Parse`): a tag wins over a digest when both are given.
    pub(crate) fn parse(image: &str) -> Result<Self, String> {
        let Some(caps) = REFERENCE.as_ref().and_then(|re| re.captures(image)) else {
            if image.is_empty() {
                return Err("repository name must have at least one component".into());
            }
            if REFERENCE
                .as_ref()
                .is_some_and(|re| re.is_match(&image.to_lowercase()))
            {
                return Err("repository name must be lowercase".into());
            }
            return Err("invalid reference format".into());
        };
        let name = caps.get(1).map(|m| m.as_str()).unwrap_or("");
        let tag = caps.get(2).map(|m| m.as_str()).unwrap_or("");
        let digest = caps.get(3).map(|m| m.as_str()).unwrap_or("");
        let (hostname, repository) = split_hostname(name);
        if repository.len() > NAME_TOTAL_LENGTH_MAX {
            return Err(format!(
                "repository name must not be more than {NAME_TOTAL_LENGTH_MAX} characters"
            ));
        }
        if !digest.is_empty() && !valid_digest(digest) {
            return Err("invalid checksum digest format".into());
        }
        Ok(ImageComponents {
            hostname: hostname.to_string(),
            repository: repository.to_string(),
            tag: tag.to_string(),
            digest: if tag.is_empty() {
                digest.to_string()
            } else {
                String::new()
            },
        })
    }

    fn full_repository(&self) -> String {
        if self.hostname.is_empty() {
            self.repository.clone()
        } else {
            format!("{}/{}", self.hostname, self.repository)
        }
    }

    fn tag_or_digest(&self) -> &str {
        if self.tag.is_empty() {
            &self.digest
        } else {
            &self.tag
        }
    }

    /// A value that is neither a tag nor a digest leaves the reference unchanged.
    fn set_tag_or_digest(&mut self, input: &str) {
        if matches(&ANCHORED_TAG, input) {
            self.tag = input.to_string();
            self.digest.clear();
        } else if matches(&ANCHORED_DIGEST, input) {
            self.digest = input.to_string();
            self.tag.clear();
        }
    }

    fn remove_tag_or_digest(&mut self) {
        if !self.tag.is_empty() {
            self.tag.clear();
        } else {
            self.digest.clear();
        }
    }
}

impl std::fmt::Display for ImageComponents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.tag.is_empty() {
            write!(f, "{}:{}", self.full_repository(), self.tag)
        } else if !self.digest.is_empty() {
            write!(f, "{}@{}", self.full_repository(), self.digest)
        } else {
            f.write_str(&self.full_repository())
        }
    }
}

/// The first path segment is a registry only when it looks like a host (`SplitHostname`).
fn split_hostname(name: &str) -> (&str, &str) {
    match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => (first, rest),
        _ => ("", name),
    }
}

/// The image after one overrider (`overrideImage`).
pub(crate) fn override_image(current: &str, overrider: &ImageOverrider) -> Result<String, String> {
    let mut c = ImageComponents::parse(current)
        .map_err(|e| format!("failed to parse image value({current}), error: {e}"))?;
    let value = overrider.value.as_str();
    match (overrider.component, overrider.operator) {
        (ImageComponent::Registry, OverriderOperator::Add) => c.hostname.push_str(value),
        (ImageComponent::Registry, OverriderOperator::Replace) => c.hostname = value.to_string(),
        (ImageComponent::Registry, OverriderOperator::Remove) => c.hostname.clear(),
        (ImageComponent::Repository, OverriderOperator::Add) => c.repository.push_str(value),
        (ImageComponent::Repository, OverriderOperator::Replace) => {
            c.repository = value.to_string()
        }
        (ImageComponent::Repository, OverriderOperator::Remove) => c.repository.clear(),
        (ImageComponent::Tag, OverriderOperator::Add) => {
            let combined = format!("{}{value}", c.tag_or_digest());
            c.set_tag_or_digest(&combined);
        }
        (ImageComponent::Tag, OverriderOperator::Replace) => c.set_tag_or_digest(value),
        (ImageComponent::Tag, OverriderOperator::Remove) => c.remove_tag_or_digest(),
    }
    Ok(c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn io(component: ImageComponent, operator: OverriderOperator, value: &str) -> ImageOverrider {
        ImageOverrider {
            predicate: None,
            component,
            operator,
            value: value.into(),
        }
    }

    #[test]
    fn parse_references() {
        let cases = [
            ("nginx", Ok(("", "nginx", "", ""))),
            ("nginx:1.25", Ok(("", "nginx", "1.25", ""))),
            ("library/nginx:1.25", Ok(("", "library/nginx", "1.25", ""))),
            (
                "docker.io/library/nginx:1.25",
                Ok(("docker.io", "library/nginx", "1.25", "")),
            ),
            ("localhost/app", Ok(("localhost", "app", "", ""))),
            (
                "registry:5000/team/app:v2",
                Ok(("registry:5000", "team/app", "v2", "")),
            ),
            ("[::1]:5000/app", Ok(("[::1]:5000", "app", "", ""))),
            (&*format!("nginx@{DIGEST}"), Ok(("", "nginx", "", DIGEST))),
            (
                &*format!("nginx:1.25@{DIGEST}"),
                Ok(("", "nginx", "1.25", "")),
            ),
            ("Nginx", Err(())),
            ("", Err(())),
            ("nginx:", Err(())),
            ("nginx@sha256:abc", Err(())),
            ("nginx@md5:0123456789abcdef0123456789abcdef", Err(())),
        ];
        for (image, want) in cases {
            let got = ImageComponents::parse(image);
            match want {
                Ok((h, r, t, d)) => {
                    let c = got.unwrap_or_else(|e| panic!("{image}: {e}"));
                    assert_eq!(
                        (
                            c.hostname.as_str(),
                            c.repository.as_str(),
                            c.tag.as_str(),
                            c.digest.as_str()
                        ),
                        (h, r, t, d),
                        "{image}"
                    );
                }
                Err(()) => assert!(got.is_err(), "{image}"),
            }
        }
    }

    #[test]
    fn override_table() {
        use ImageComponent::*;
        use OverriderOperator::*;
        let cases = [
            (
                "nginx:1.25",
                io(Registry, Replace, "mirror.example.com"),
                "mirror.example.com/nginx:1.25",
            ),
            (
                "docker.io/library/nginx:1.25",
                io(Registry, Replace, "mirror.example.com"),
                "mirror.example.com/library/nginx:1.25",
            ),
            (
                "docker.io/nginx",
                io(Registry, Add, "-cn"),
                "docker.io-cn/nginx",
            ),
            ("docker.io/nginx:1", io(Registry, Remove, ""), "nginx:1"),
            ("nginx:1", io(Repository, Replace, "team/web"), "team/web:1"),
            ("nginx:1", io(Repository, Add, "-debug"), "nginx-debug:1"),
            ("nginx:1", io(Tag, Replace, "2"), "nginx:2"),
            ("nginx:1", io(Tag, Add, ".1"), "nginx:1.1"),
            ("nginx:1", io(Tag, Remove, ""), "nginx"),
            (
                "nginx:1",
                io(Tag, Replace, DIGEST),
                &*format!("nginx@{DIGEST}"),
            ),
            ("nginx:1", io(Tag, Replace, "not a tag!"), "nginx:1"),
        ];
        for (image, o, want) in cases {
            assert_eq!(override_image(image, &o).unwrap(), want, "{image} {o:?}");
        }
        assert!(override_image("BAD", &io(Tag, Replace, "1")).is_err());
    }
}
