//! Admission: the defaulting and validation every write passes before storage, in
//! kube-apiserver's order (defaulting and mutation, then validation).

use serde_json::{Value, json};

use crate::error::{ApiError, Cause, karmada_error};
use crate::managed_fields::Subresource;
use crate::object;
use crate::options::WriteContext;
use crate::resources::{ResourceDef, Source};
use crate::state::ApiState;
use kube_registry::Strategy;

/// The kind of write being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A create.
    Create,
    /// An update or patch.
    Update,
}

/// Whether admitting a status write of this kind reads nothing but the object's `metadata` and
/// `status` (so a registry may hand it the object without its other members): true for
/// built-in kinds (see `admit`) and for Karmada's kinds but Cluster, whose admission decodes
/// and canonicalises the whole object, and older versions served by conversion, which convert
/// the whole object; a custom resource is validated whole against its schema.
pub fn status_write_reads_only_status(def: &ResourceDef) -> bool {
    match def.source {
        Source::BuiltIn => true,
        Source::Karmada => {
            karmada_api::status_admission_reads_only_status(&def.kind)
                && !crate::conversion::converts(def)
        }
        _ => false,
    }
}

/// Defaults and validates `obj` (the new state); `old` is the current state on update.
pub async fn admit(
    state: &ApiState,
    def: &ResourceDef,
    op: Operation,
    sub: Subresource,
    obj: &mut Value,
    old: Option<&Value>,
    _ctx: &WriteContext,
) -> Result<(), ApiError> {
    // RBAC privilege-escalation prevention runs first, as kube's policy-based storage does.
    state.check_escalation(def, obj, old)?;
    let (group, kind) = (def.group.as_str(), def.kind.as_str());
    let strategy = kube_registry::strategy_for(group, kind);
    // A status write keeps everything but `.status` from the stored object (registry's
    // prepare_for_update), which was defaulted and validated when written: for built-in kinds
    // there is nothing left to default or validate (kube's status strategies validate only
    // metadata and status). The most frequent writes of the pipeline take this path.
    if sub == Subresource::Status && def.source == Source::BuiltIn {
        return Ok(());
    }
    if def.source == Source::BuiltIn {
        // A resource served by conversion got its own version's defaults when converted.
        if !crate::conversion::converts(def) {
            strategy.default(obj);
        }
        match (op, old) {
            (Operation::Create, _) | (_, None) => strategy.prepare_for_create(obj),
            (Operation::Update, Some(old)) if sub == Subresource::Main => {
                strategy.prepare_for_update(obj, old)
            }
            _ => {}
        }
        if op == Operation::Create && group.is_empty() && kind == "Service" {
            allocate_cluster_ip(state, def, obj);
        }
    }
    if def.is_custom() {
        if op == Operation::Create {
            crate::crd::check_create_allowed(state, def)?;
        }
        crate::crd::default_custom_resource(def, obj);
    }
    // kube validates metadata for every kind; the built-in rules add the kind's own checks.
    let mut causes = strategy.validate(obj, old);
    causes.extend(crate::crd::validate(def, obj, old));
    if def.source == Source::Karmada
        && let Some(info) = karmada_api::kind_info(kind)
    {
        let name = object::name(obj).to_string();
        for msg in info.validate_name(&name, false) {
            let cause = Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: \"{name}\": {msg}"),
                field: "metadata.name".into(),
            };
            if !causes.contains(&cause) {
                causes.push(cause);
            }
        }
    }
    if !causes.is_empty() {
        let group = kube_registry::conversion::storage_group(group, kind);
        return Err(ApiError::invalid(group, kind, object::name(obj), causes));
    }
    if def.source == Source::Karmada {
        let kop = match (op, sub) {
            (Operation::Create, _) => karmada_api::Operation::Create,
            (Operation::Update, Subresource::Main | Subresource::Finalize) => {
                karmada_api::Operation::Update
            }
            (Operation::Update, Subresource::Status) => karmada_api::Operation::UpdateStatus,
        };
        // Karmada's customization webhook compares with the other stored objects of the kind.
        let peers = if karmada_api::admission_reads_peers(kind) {
            stored_objects(state, def).await?
        } else {
            Vec::new()
        };
        karmada_api::admit_with_peers(kind, kop, obj, old, &peers)
            .map_err(|e| karmada_error(def, obj, &e))?;
    }
    Ok(())
}

/// Every stored object of a resource (a webhook's list of its kind).
async fn stored_objects(state: &ApiState, def: &ResourceDef) -> Result<Vec<Value>, ApiError> {
    let Some(prefix) = def.prefix() else {
        return Ok(Vec::new());
    };
    let resp = state
        .store
        .range(storage::RangeRequest {
            prefix: prefix.to_string(),
            start_after: None,
            limit: 0,
            revision: 0,
        })
        .await?;
    Ok(resp
        .kvs
        .iter()
        .filter_map(|kv| crate::storage_codec::decode_value(def, &kv.value, kv.mod_revision).ok())
        .collect())
}

/// The API warnings of an admitted write, as admission webhooks return them: the fields of a
/// Karmada object that are accepted without effect (main-resource writes).
pub fn warnings(def: &ResourceDef, sub: Subresource, obj: &Value) -> Vec<String> {
    if def.source != Source::Karmada || sub != Subresource::Main {
        return Vec::new();
    }
    karmada_api::ineffective::warnings(&def.kind, obj)
}

/// Karmada's resource-deletion-protection webhook: objects labelled
/// `resourcetemplate.karmada.io/deletion-protected=Always` cannot be deleted.
pub fn admit_delete(state: &ApiState, def: &ResourceDef, obj: &Value) -> Result<(), ApiError> {
    if state.config.flavor != crate::state::Flavor::ControlPlane {
        return Ok(());
    }
    karmada_api::admit_delete(obj).map_err(|e| karmada_error(def, obj, &e))
}

/// The error kube gives for an invalid name of this resource, if any (also used for names
/// in URLs).
pub fn name_error(def: &ResourceDef, name: &str) -> Option<String> {
    kube_registry::strategy_for(&def.group, &def.kind).validate_name(name)
}

/// The service CIDR clusterIPs are allocated from (kube's default 10.96.0.0/12).
const SERVICE_CIDR_BASE: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const SERVICE_CIDR_SIZE: u32 = 1 << 20;

/// Allocates a free clusterIP for a new Service that asks for one, as kube's ipallocator
/// does: random addresses from the service range that no other Service holds.
fn allocate_cluster_ip(state: &ApiState, def: &ResourceDef, obj: &mut Value) {
    let spec_type = obj
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    if spec_type == "ExternalName" {
        return;
    }
    let wanted = obj
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !wanted.is_empty() {
        return;
    }
    let snapshot = state.catalog.snapshot();
    let Some(services) = snapshot.get(&def.group, &def.version, &def.plural).cloned() else {
        return;
    };
    let used: std::collections::HashSet<String> = state
        .cache(&services)
        .map(|c| {
            c.all()
                .iter()
                .filter_map(|o| {
                    o.value()
                        .pointer("/spec/clusterIP")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    for _ in 0..64 {
        let r = u32::from_be_bytes(
            uuid::Uuid::new_v4().as_bytes()[..4]
                .try_into()
                .unwrap_or([0; 4]),
        );
        // Skip the network address and the first address (kube reserves .1 for the
        // `kubernetes` Service).
        let offset = 2 + r % (SERVICE_CIDR_SIZE - 3);
        let ip = std::net::Ipv4Addr::from(SERVICE_CIDR_BASE + offset).to_string();
        if !used.contains(&ip) {
            object::set_path(obj, ".spec.clusterIP", json!(ip));
            object::set_path(obj, ".spec.clusterIPs", json!([ip]));
            return;
        }
    }
}

/// Validation causes as an Invalid error (helper for callers with ready causes).
pub fn invalid(def: &ResourceDef, name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid(&def.group, &def.kind, name, causes)
}
