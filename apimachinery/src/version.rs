//! Version strings as k8s.io/apimachinery/pkg/version orders them.

use std::cmp::Ordering;

/// kube's version priority (k8s.io/apimachinery/pkg/version.CompareKubeAwareVersionStrings):
/// GA before beta before alpha, higher numbers first, then other names alphabetically.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: u64 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (stage, n) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        let minor: u64 = n.parse().ok()?;
        Some((major, stage, minor))
    }
    match (parse(a), parse(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sb.cmp(&sa).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_priority() {
        let mut v = vec![
            "v1alpha1", "v2", "foo", "v1", "v1beta2", "v1beta1", "v10", "bar",
        ];
        v.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            v,
            vec![
                "v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "bar", "foo"
            ]
        );
    }
}
