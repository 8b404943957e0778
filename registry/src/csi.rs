//! storage.k8s.io's CSI objects: CSIDriver, CSINode, CSIStorageCapacity and VolumeAttachment
//! (pkg/apis/storage/validation and pkg/apis/storage/v1/defaults.go).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::field::{self, Bad, Path};
use super::json::{self, default_nil};
use super::meta;
use super::names;
use apimachinery::quantity::Quantity;
use apimachinery::status::Cause;

/// The group of these kinds.
pub(crate) const GROUP: &str = "storage.k8s.io";

const CSI_NODE_ID_MAX: usize = 192;
const MAX_ATTACHED_VOLUME_METADATA: usize = 256 * 1024;
const MAX_VOLUME_ERROR_MESSAGE: usize = 1024;

fn spec(obj: &Value) -> &Value {
    static EMPTY: Value = Value::Null;
    obj.get("spec").unwrap_or(&EMPTY)
}

/// SetDefaults_CSIDriver (SELinuxMountReadWriteOncePod is on by default in 1.32).
pub(crate) fn default_csi_driver(obj: &mut Value) {
    let Some(spec) = json::obj_mut(obj, "spec") else {
        return;
    };
    default_nil(spec, "attachRequired", json!(true));
    default_nil(spec, "podInfoOnMount", json!(false));
    default_nil(spec, "storageCapacity", json!(false));
    default_nil(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    default_nil(spec, "requiresRepublish", json!(false));
    default_nil(spec, "seLinuxMount", json!(false));
    if json::list(spec, "volumeLifecycleModes").is_empty() {
        spec["volumeLifecycleModes"] = json!(["Persistent"]);
    }
}

/// ValidateCSIDriver (+ ValidateCSIDriverUpdate).
pub(crate) fn validate_csi_driver(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let s = spec(obj);
    let p = Path::new("spec");
    // kube names the path `attachedRequired`, after the field's old name.
    for (key, path) in [
        ("attachRequired", "attachedRequired"),
        ("podInfoOnMount", "podInfoOnMount"),
        ("storageCapacity", "storageCapacity"),
        ("seLinuxMount", "seLinuxMount"),
    ] {
        if json::field(s, key).is_none() {
            errs.push(field::required(&p.child(path), ""));
        }
    }
    if let Some(policy) = json::opt_str(s, "fsGroupPolicy") {
        let supported = ["File", "None", "ReadWriteOnceWithFSType"];
        if !supported.contains(&policy) {
            errs.push(field::not_supported(
                &p.child("fsGroupPolicy"),
                Bad::str(policy),
                &supported,
            ));
        }
    }
    let mut audiences = BTreeSet::new();
    for (i, t) in json::list(s, "tokenRequests").iter().enumerate() {
        let tp = p.child("tokenRequests").index(i);
        let audience = json::string(t, "audience");
        if !audiences.insert(audience) {
            errs.push(field::duplicate(&tp.child("audience"), Bad::str(audience)));
            continue;
        }
        if let Some(secs) = json::int(t, "expirationSeconds") {
            if secs < 600 {
                errs.push(field::invalid(
                    &tp.child("expirationSeconds"),
                    Bad::Int(secs),
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if secs > 1 << 32 {
                errs.push(field::invalid(
                    &tp.child("expirationSeconds"),
                    Bad::Int(secs),
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
        }
    }
    for mode in json::list(s, "volumeLifecycleModes") {
        let mode = mode.as_str().unwrap_or_default();
        if mode != "Persistent" && mode != "Ephemeral" {
            errs.push(field::not_supported(
                &p.child("volumeLifecycleModes"),
                Bad::str(mode),
                &["Persistent", "Ephemeral"],
            ));
        }
    }
    if let Some(old) = old {
        let os = spec(old);
        for (key, path) in [
            ("attachRequired", "attachedRequired"),
            ("volumeLifecycleModes", "volumeLifecycleModes"),
        ] {
            if !json::semantic_eq(json::field(s, key), json::field(os, key)) {
                errs.push(field::immutable(&p.child(path), json::field(s, key)));
            }
        }
    }
}

/// ValidateCSINode (+ ValidateCSINodeUpdate: an existing driver's entry is immutable).
pub(crate) fn validate_csi_node(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let p = Path::new("spec").child("drivers");
    let drivers = json::list(spec(obj), "drivers");
    let mut seen = BTreeSet::new();
    for (i, d) in drivers.iter().enumerate() {
        let dp = p.index(i);
        let name = json::string(d, "name");
        for m in names::name_is_dns_subdomain(name, false) {
            errs.push(field::invalid(&dp.child("name"), Bad::str(name), &m));
        }
        let node_id = json::string(d, "nodeID");
        if node_id.is_empty() {
            errs.push(field::required(&dp.child("nodeID"), ""));
        }
        if node_id.len() > CSI_NODE_ID_MAX {
            errs.push(field::invalid(
                &dp.child("nodeID"),
                Bad::str(node_id),
                &format!("must be {CSI_NODE_ID_MAX} characters or less"),
            ));
        }
        if let Some(count) = json::field(d, "allocatable").and_then(|a| json::int(a, "count"))
            && count < 0
        {
            errs.push(field::invalid(
                &dp.children(&["allocatable", "count"]),
                Bad::Int(count),
                "must be greater than or equal to 0",
            ));
        }
        if !seen.insert(name) {
            errs.push(field::duplicate(&dp.child("name"), Bad::str(name)));
        }
        let mut keys = BTreeSet::new();
        for key in json::list(d, "topologyKeys") {
            let key = key.as_str().unwrap_or_default();
            if key.is_empty() {
                errs.push(field::required(&dp, ""));
            }
            if !keys.insert(key) {
                errs.push(field::duplicate(&dp, Bad::str(key)));
            }
            for m in names::qualified_name(key) {
                errs.push(field::invalid(&dp, Bad::str(key), &m));
            }
        }
    }
    if let Some(old) = old {
        for od in json::list(spec(old), "drivers") {
            let changed = drivers.iter().any(|nd| {
                json::string(nd, "name") == json::string(od, "name")
                    && !json::semantic_eq(Some(nd), Some(od))
            });
            if changed {
                errs.push(field::invalid(&p, Bad::Omit, "field is immutable"));
            }
        }
    }
}

/// ValidateCSIStorageCapacity (+ the immutable nodeTopology and storageClassName on update).
pub(crate) fn validate_csi_storage_capacity(
    obj: &Value,
    old: Option<&Value>,
    errs: &mut Vec<Cause>,
) {
    errs.extend(meta::validate_label_selector(
        json::field(obj, "nodeTopology"),
        &Path::new("nodeTopology"),
    ));
    let class = json::string(obj, "storageClassName");
    for m in names::name_is_dns_subdomain(class, false) {
        errs.push(field::invalid(
            &Path::new("storageClassName"),
            Bad::str(class),
            &m,
        ));
    }
    for key in ["capacity", "maximumVolumeSize"] {
        let Some(q) = json::field(obj, key) else {
            continue;
        };
        let text = match q {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match Quantity::parse(&text) {
            // Only `capacity` is checked for sign (ValidateNonnegativeQuantity).
            Ok(q) if key == "capacity" && q.is_negative() => errs.push(field::invalid(
                &Path::new(key),
                Bad::Str(q.canonical()),
                "must be greater than or equal to 0",
            )),
            Ok(_) => {}
            Err(_) => errs.push(field::invalid(
                &Path::new(key),
                Bad::str(&text),
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            )),
        }
    }
    if let Some(old) = old {
        if !json::semantic_eq(
            json::field(obj, "nodeTopology"),
            json::field(old, "nodeTopology"),
        ) {
            errs.push(field::invalid(
                &Path::new("nodeTopology"),
                Bad::Raw(meta::go_label_selector(json::field(obj, "nodeTopology"))),
                "field is immutable",
            ));
        }
        if class != json::string(old, "storageClassName") {
            errs.push(field::invalid(
                &Path::new("storageClassName"),
                Bad::str(class),
                "field is immutable",
            ));
        }
    }
}

/// ValidateVolumeAttachment + ValidateVolumeAttachmentV1 (+ the immutable spec on update).
pub(crate) fn validate_volume_attachment(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let s = spec(obj);
    let p = Path::new("spec");
    let attacher = json::string(s, "attacher");
    if attacher.is_empty() {
        errs.push(field::required(&p.child("attacher"), ""));
    }
    let empty = Value::Null;
    let source = json::field(s, "source").unwrap_or(&empty);
    let sp = p.child("source");
    let pv = json::opt_str(source, "persistentVolumeName");
    let inline = json::field(source, "inlineVolumeSpec");
    const ONE_OF: &str = "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
    match (inline, pv) {
        (None, None) => errs.push(field::required(&sp, ONE_OF)),
        (Some(_), Some(_)) => errs.push(field::forbidden(&sp, ONE_OF)),
        (None, Some("")) => errs.push(field::required(
            &sp.child("persistentVolumeName"),
            "must specify non empty persistentVolumeName",
        )),
        _ => {}
    }
    let node = json::string(s, "nodeName");
    for m in names::name_is_dns_subdomain(node, false) {
        errs.push(field::invalid(&p.child("nodeName"), Bad::str(node), &m));
    }
    let status = json::field(obj, "status").unwrap_or(&empty);
    let stp = Path::new("status");
    let metadata_size: usize = json::object(status, "attachmentMetadata")
        .map(|m| {
            m.iter()
                .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
                .sum()
        })
        .unwrap_or(0);
    if metadata_size > MAX_ATTACHED_VOLUME_METADATA {
        errs.push(field::too_long(
            &stp.child("attachmentMetadata"),
            MAX_ATTACHED_VOLUME_METADATA,
        ));
    }
    for key in ["attachError", "detachError"] {
        let Some(e) = json::field(status, key) else {
            continue;
        };
        if json::string(e, "message").len() > MAX_VOLUME_ERROR_MESSAGE {
            // kube reports the metadata limit here.
            errs.push(field::too_long(
                &stp.children(&[key, "message"]),
                MAX_ATTACHED_VOLUME_METADATA,
            ));
        }
        if let Some(code) = json::int(e, "errorCode").filter(|c| *c < 0) {
            errs.push(field::invalid(
                &stp.children(&[key, "errorCode"]),
                Bad::Int(code),
                &names::inclusive_range_error(0, i64::from(i32::MAX)),
            ));
        }
    }
    // ValidateVolumeAttachmentV1: the attacher is a CSI driver name; the PV name a path segment.
    if !attacher.is_empty() {
        for m in names::name_is_dns_subdomain(attacher, false) {
            errs.push(field::invalid(
                &Path::new("spec.attacher"),
                Bad::str(attacher),
                &m,
            ));
        }
    }
    if let Some(pv) = pv.filter(|pv| !pv.is_empty()) {
        for m in names::path_segment_name(pv, false) {
            errs.push(field::invalid(
                &Path::new("spec.source.persistentVolumeName"),
                Bad::str(pv),
                &m,
            ));
        }
    }
    if let Some(old) = old
        && !json::semantic_eq(json::field(obj, "spec"), json::field(old, "spec"))
    {
        errs.push(field::invalid(&p, Bad::Omit, "field is immutable"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(errs: &[Cause]) -> Vec<(&str, &str)> {
        errs.iter()
            .map(|c| (c.field.as_str(), c.message.as_str()))
            .collect()
    }

    #[test]
    fn csi_driver_defaults_then_validates() {
        let mut d = json!({"spec": {"fsGroupPolicy": "Sometimes"}});
        default_csi_driver(&mut d);
        assert_eq!(d["spec"]["attachRequired"], true);
        assert_eq!(d["spec"]["volumeLifecycleModes"], json!(["Persistent"]));
        let mut errs = Vec::new();
        validate_csi_driver(&d, None, &mut errs);
        assert_eq!(
            fields(&errs),
            [(
                "spec.fsGroupPolicy",
                "Unsupported value: \"Sometimes\": supported values: \"File\", \"None\", \"ReadWriteOnceWithFSType\""
            )]
        );
        let mut changed = d.clone();
        changed["spec"]["attachRequired"] = json!(false);
        changed["spec"]["fsGroupPolicy"] = json!("File");
        errs.clear();
        validate_csi_driver(&changed, Some(&d), &mut errs);
        assert_eq!(
            fields(&errs),
            [(
                "spec.attachedRequired",
                "Invalid value: false: field is immutable"
            )]
        );
    }

    #[test]
    fn volume_attachment_needs_one_source_and_keeps_its_spec() {
        let va = json!({"spec": {"attacher": "csi.example.com", "nodeName": "n1", "source": {}}});
        let mut errs = Vec::new();
        validate_volume_attachment(&va, None, &mut errs);
        assert_eq!(
            fields(&errs),
            [(
                "spec.source",
                "Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"
            )]
        );
        let ok = json!({"spec": {"attacher": "csi.example.com", "nodeName": "n1",
            "source": {"persistentVolumeName": "pv1"}}});
        let mut moved = ok.clone();
        moved["spec"]["nodeName"] = json!("n2");
        errs.clear();
        validate_volume_attachment(&moved, Some(&ok), &mut errs);
        assert_eq!(
            fields(&errs),
            [("spec", "Invalid value: field is immutable")]
        );
    }

    #[test]
    fn csi_node_and_capacity_rules() {
        let node = json!({"spec": {"drivers": [
            {"name": "a.example.com", "nodeID": ""},
            {"name": "a.example.com", "nodeID": "n", "allocatable": {"count": -1}},
        ]}});
        let mut errs = Vec::new();
        validate_csi_node(&node, None, &mut errs);
        assert_eq!(
            fields(&errs),
            [
                ("spec.drivers[0].nodeID", "Required value"),
                (
                    "spec.drivers[1].allocatable.count",
                    "Invalid value: -1: must be greater than or equal to 0"
                ),
                ("spec.drivers[1].name", "Duplicate value: \"a.example.com\""),
            ]
        );
        let cap = json!({"storageClassName": "Fast", "capacity": "-1Gi"});
        errs.clear();
        validate_csi_storage_capacity(&cap, None, &mut errs);
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!(errs[0].field, "storageClassName");
        assert_eq!(
            errs[1].message,
            "Invalid value: \"-1Gi\": must be greater than or equal to 0"
        );
    }
}
