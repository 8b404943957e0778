//! node.k8s.io/v1 RuntimeClass (pkg/apis/node/validation).

use serde_json::Value;

use super::field::{self, Bad, Path};
use super::json;
use super::meta;
use super::names;
use super::pod;
use apimachinery::status::Cause;

/// ValidateRuntimeClass (+ ValidateRuntimeClassUpdate: the handler is immutable).
pub(crate) fn validate(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let handler = json::string(obj, "handler");
    for m in names::name_is_dns_label(handler, false) {
        errs.push(field::invalid(&Path::new("handler"), Bad::str(handler), &m));
    }
    if let Some(overhead) = json::field(obj, "overhead") {
        // kube reuses the ResourceRequirements rules with podFixed as the limits.
        let limits = serde_json::json!({"limits": json::field(overhead, "podFixed")});
        errs.extend(pod::validate_resource_requirements(
            &limits,
            &Path::new("overhead"),
        ));
    }
    if let Some(scheduling) = json::field(obj, "scheduling") {
        let p = Path::new("scheduling");
        errs.extend(meta::validate_labels(
            json::string_map(scheduling, "nodeSelector").as_ref(),
            &p.child("nodeSelector"),
        ));
        errs.extend(pod::validate_tolerations(
            scheduling,
            &p.child("tolerations"),
        ));
    }
    if let Some(old) = old {
        let before = json::string(old, "handler");
        if handler != before {
            errs.push(field::immutable(
                &Path::new("handler"),
                json::field(obj, "handler"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn handler_is_a_dns_label_and_immutable() {
        let mut errs = Vec::new();
        validate(&json!({"handler": "Run_C"}), None, &mut errs);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "handler");
        assert!(
            errs[0]
                .message
                .starts_with("Invalid value: \"Run_C\": a lowercase RFC 1123 label")
        );
        errs.clear();
        validate(
            &json!({"handler": "kata"}),
            Some(&json!({"handler": "runc"})),
            &mut errs,
        );
        assert_eq!(
            errs[0].message,
            "Invalid value: \"kata\": field is immutable"
        );
    }
}
