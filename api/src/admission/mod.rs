//! Admission of Karmada objects, as kube-apiserver plus karmada-webhook (or, for Cluster,
//! karmada-aggregated-apiserver) would admit them.
//!
//! For the CRD kinds the order is kube-apiserver's: the CRD schema's null-dropping, defaulting
//! and pruning; schema validation (422 Invalid); Karmada's mutating webhook, whose Go-encoded
//! result replaces the object (so fields Go omits when empty disappear); defaulting again;
//! Karmada's validating webhook (403 Forbidden, "admission webhook ... denied the request").
//! Where Karmada registers no mutating webhook, the schema-normalised request is kept as is.
//! One deliberate difference: a value of the wrong JSON type is reported as a 422 field error
//! by the schema check, where Karmada's mutating webhook would fail to decode it first.

mod binding;
mod cluster;
mod config;
mod networking;
mod policy;
mod quota;
mod taint_policy;
mod work;

pub use taint_policy::{allow_no_execute_taint_policy, set_allow_no_execute_taint_policy};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::field::{FieldError, aggregate_message};
use crate::schema::{Checks, KindSchema, RESOURCE_ROOT_SKIP, kind_schema};

/// The write being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A create of the main resource.
    Create,
    /// An update (or patch) of the main resource.
    Update,
    /// An update of the status subresource: schema processing only, no webhooks (Karmada's
    /// webhooks are not registered for status).
    UpdateStatus,
}

/// Why an object was not admitted.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AdmissionError {
    /// The object fails schema or registry validation: HTTP 422, reason Invalid, one cause per
    /// field error.
    #[error("{}", aggregate_message(.0))]
    Invalid(Vec<FieldError>),
    /// A Karmada webhook refused the request. The status message is
    /// `admission webhook "<webhook>" denied the request: <message>`.
    #[error("admission webhook \"{webhook}\" denied the request: {message}")]
    Denied {
        /// Name of the webhook, e.g. `propagationpolicy.karmada.io`.
        webhook: &'static str,
        /// HTTP status code: 403 for a denial, 400 or 500 for a webhook error.
        code: u16,
        /// metav1 StatusReason: `Forbidden`, or empty for a webhook error.
        reason: &'static str,
        /// The webhook's message.
        message: String,
        /// The field errors behind the message, when there are any.
        errors: Vec<FieldError>,
    },
    /// The body cannot be handled as the kind at all: HTTP 400, reason BadRequest.
    #[error("{0}")]
    BadRequest(String),
}

impl AdmissionError {
    /// The HTTP status code of the response.
    pub fn code(&self) -> u16 {
        match self {
            AdmissionError::Invalid(_) => 422,
            AdmissionError::Denied { code, .. } => *code,
            AdmissionError::BadRequest(_) => 400,
        }
    }

    /// The metav1 StatusReason of the response (may be empty for a webhook error).
    pub fn reason(&self) -> &'static str {
        match self {
            AdmissionError::Invalid(_) => "Invalid",
            AdmissionError::Denied { reason, .. } => reason,
            AdmissionError::BadRequest(_) => "BadRequest",
        }
    }

    /// The field errors, for a Status' details.causes.
    pub fn field_errors(&self) -> &[FieldError] {
        match self {
            AdmissionError::Invalid(errors) | AdmissionError::Denied { errors, .. } => errors,
            AdmissionError::BadRequest(_) => &[],
        }
    }

    /// The Status message kube-apiserver would send, e.g.
    /// `PropagationPolicy.policy.karmada.io "nginx" is invalid: spec.priority: ...`.
    pub fn status_message(&self, kind: &str, group: &str, name: &str) -> String {
        match self {
            AdmissionError::Invalid(errors) => {
                let qualified = if group.is_empty() {
                    kind.to_owned()
                } else {
                    format!("{kind}.{group}")
                };
                let quoted = crate::field::go_quote(name);
                if errors.is_empty() {
                    format!("{qualified} {quoted} is invalid")
                } else {
                    format!(
                        "{qualified} {quoted} is invalid: {}",
                        aggregate_message(errors)
                    )
                }
            }
            other => other.to_string(),
        }
    }

    fn denied(webhook: &'static str, message: impl Into<String>) -> Self {
        AdmissionError::Denied {
            webhook,
            code: 403,
            reason: "Forbidden",
            message: message.into(),
            errors: Vec::new(),
        }
    }

    fn denied_fields(webhook: &'static str, errors: Vec<FieldError>) -> Self {
        AdmissionError::Denied {
            webhook,
            code: 403,
            reason: "Forbidden",
            message: aggregate_message(&errors),
            errors,
        }
    }
}

/// Admits a write of a Karmada object: fills in defaults, runs Karmada's mutations, validates,
/// and on success replaces `obj` with the typed, defaulted and pruned object to store.
///
/// `kind` is the object's kind (e.g. `PropagationPolicy`); kinds this crate does not define are
/// accepted unchanged. `old` is the stored object for updates. Generic object-meta handling
/// (name rules via [`crate::catalog::KindInfo::validate_name`], uid, generation, status reset on
/// create and main-resource updates) is the caller's.
pub fn admit(
    kind: &str,
    op: Operation,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), AdmissionError> {
    admit_with_peers(kind, op, obj, old, &[])
}

/// Whether admitting a kind checks the object against the other stored objects of its kind
/// (Karmada's ResourceInterpreterCustomization webhook lists them): the caller passes those to
/// [`admit_with_peers`].
pub fn admission_reads_peers(kind: &str) -> bool {
    kind == "ResourceInterpreterCustomization"
}

/// [`admit`], with the stored objects of the same kind (`peers`, including the old version of
/// the object itself) for kinds whose admission compares against them.
pub fn admit_with_peers(
    kind: &str,
    op: Operation,
    obj: &mut Value,
    old: Option<&Value>,
    peers: &[Value],
) -> Result<(), AdmissionError> {
    use crate::config::v1alpha1::{
        ResourceInterpreterCustomization, ResourceInterpreterWebhookConfiguration,
    };
    use crate::policy::v1alpha1::{
        ClusterOverridePolicy, ClusterPropagationPolicy, ClusterTaintPolicy, OverridePolicy,
        PropagationPolicy,
    };
    use crate::work::v1alpha1::Work;
    use crate::work::v1alpha2::{ClusterResourceBinding, ResourceBinding};

    match kind {
        "PropagationPolicy" => admit_crd::<PropagationPolicy>(op, obj, old),
        "ClusterPropagationPolicy" => admit_crd::<ClusterPropagationPolicy>(op, obj, old),
        "OverridePolicy" => admit_crd::<OverridePolicy>(op, obj, old),
        "ClusterOverridePolicy" => admit_crd::<ClusterOverridePolicy>(op, obj, old),
        "ClusterTaintPolicy" => admit_crd::<ClusterTaintPolicy>(op, obj, old),
        "MultiClusterService" => {
            admit_crd::<crate::networking::v1alpha1::MultiClusterService>(op, obj, old)
        }
        "MultiClusterIngress" => {
            admit_crd::<crate::networking::v1alpha1::MultiClusterIngress>(op, obj, old)
        }
        "FederatedResourceQuota" => {
            admit_crd::<crate::policy::v1alpha1::FederatedResourceQuota>(op, obj, old)
        }
        "Remedy" => admit_crd::<crate::remedy::v1alpha1::Remedy>(op, obj, old),
        "WorkloadRebalancer" => {
            admit_crd::<crate::apps::v1alpha1::WorkloadRebalancer>(op, obj, old)
        }
        "ResourceBinding" => admit_crd::<ResourceBinding>(op, obj, old),
        "ClusterResourceBinding" => admit_crd::<ClusterResourceBinding>(op, obj, old),
        "Work" => admit_crd::<Work>(op, obj, old),
        "ResourceInterpreterCustomization" => {
            admit_crd::<ResourceInterpreterCustomization>(op, obj, old)?;
            if op == Operation::UpdateStatus {
                return Ok(());
            }
            config::check_conflicts(obj, peers)
        }
        "ResourceInterpreterWebhookConfiguration" => {
            admit_crd::<ResourceInterpreterWebhookConfiguration>(op, obj, old)
        }
        "Cluster" => cluster::admit(op, obj, old),
        _ => Ok(()),
    }
}

/// Whether `admit` of an `UpdateStatus` of this kind reads only `metadata` and `status`: every
/// kind but Cluster, whose strategy decodes and canonicalises the whole object (the CRD kinds
/// go through `admit_status`; kinds without webhooks read nothing).
pub fn status_admission_reads_only_status(kind: &str) -> bool {
    kind != "Cluster"
}

/// Admits a delete: Karmada's resourcedeletionprotection webhook refuses to delete any object
/// labelled `resourcetemplate.karmada.io/deletion-protected: Always`.
pub fn admit_delete(obj: &Value) -> Result<(), AdmissionError> {
    use crate::well_known::labels::{DELETION_PROTECTION, DELETION_PROTECTION_ALWAYS};
    let protected = obj
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| l.get(DELETION_PROTECTION))
        .and_then(Value::as_str)
        == Some(DELETION_PROTECTION_ALWAYS);
    if protected {
        return Err(AdmissionError::denied(
            "resourcedeletionprotection.karmada.io",
            format!(
                "This resource is protected, please make sure to remove the label: {DELETION_PROTECTION}"
            ),
        ));
    }
    Ok(())
}

/// What a CRD kind adds to the generic schema processing: its webhooks.
trait Webhooks:
    Sized
    + Serialize
    + DeserializeOwned
    + k8s_openapi::Resource
    + k8s_openapi::Metadata<Ty = ObjectMeta>
{
    /// Whether Karmada registers a mutating webhook for this operation. Its response is the
    /// Go-encoded object, so omitted-when-empty fields disappear; without one the stored
    /// object is the request as the CRD schema normalised it.
    fn mutates(_op: Operation) -> bool {
        false
    }

    /// Karmada's mutating webhook; called only when `mutates` says so.
    fn mutate(&mut self, _op: Operation) -> Result<(), AdmissionError> {
        Ok(())
    }

    /// Whether Karmada registers a validating webhook for this kind (`validate` is called):
    /// without one, neither the old object nor the admitted one is decoded to run it.
    const VALIDATES: bool = false;

    /// Whether `validate` looks at the old object; when it does not, an update does not
    /// decode the stored object for it.
    const VALIDATION_READS_OLD: bool = true;

    /// Karmada's validating webhook; not called for status updates.
    fn validate(&self, _old: Option<&Self>, _op: Operation) -> Result<(), AdmissionError> {
        Ok(())
    }
}

/// Karmada registers no webhook for WorkloadRebalancer: the CRD schema is all.
impl Webhooks for crate::apps::v1alpha1::WorkloadRebalancer {}

/// Karmada registers no webhook for Remedy either.
impl Webhooks for crate::remedy::v1alpha1::Remedy {}

fn admit_crd<T: Webhooks>(
    op: Operation,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), AdmissionError> {
    let schema = schema_of::<T>()?;
    if !obj.is_object() {
        return Err(AdmissionError::BadRequest(format!(
            "{} in version \"{}\" cannot be handled as a {}: the object is not a JSON object",
            T::KIND,
            T::VERSION,
            T::KIND
        )));
    }
    if op == Operation::UpdateStatus {
        return admit_status::<T>(schema, obj, old);
    }
    normalize(schema, obj, RESOURCE_ROOT_SKIP);
    check_schema(schema, obj, RESOURCE_ROOT_SKIP)?;
    // Each typed decode of a binding or Work is a large share of a write's CPU, so the
    // object is decoded whole only where something reads it whole: a mutating webhook, and
    // the validating one (which decodes the admitted object below).
    // Without webhooks the typed decode is the only check beyond the schema.
    let whole: Option<T> = if T::mutates(op) || !T::VALIDATES {
        Some(decode(obj)?)
    } else {
        None
    };
    let old_typed: Option<T> = match old {
        Some(o) if T::VALIDATES && T::VALIDATION_READS_OLD && op != Operation::Create => {
            Some(decode(o)?)
        }
        _ => None,
    };
    match whole {
        Some(mut typed) if T::mutates(op) => {
            typed.mutate(op)?;
            *obj = encode(&typed)?;
        }
        // Only the metadata goes through its typed form, as kube-apiserver decodes it. The
        // stored metadata went through it when written, so metadata this write leaves as it
        // was (a controller's spec patch) is kept as it is.
        _ if same_metadata(obj.get("metadata"), old.and_then(|o| o.get("metadata"))) => {}
        whole => {
            let metadata = match whole {
                Some(typed) => typed.metadata().clone(),
                None => decode::<MetadataOf<T>>(obj)?.metadata,
            };
            if let Some(map) = obj.as_object_mut() {
                map.insert("metadata".into(), encode(&metadata)?);
            }
        }
    }
    default_and_check(schema, obj, RESOURCE_ROOT_SKIP)?;
    if T::VALIDATES {
        let final_typed: T = decode(obj)?;
        final_typed.validate(old_typed.as_ref(), op)?;
    }
    Ok(())
}

/// A status write: the most frequent write of the pipeline. Everything but `.status` is the
/// stored object (the registry aligned it), which was admitted when written, and no webhook
/// runs for status: so only `.status` is normalised and validated, and the metadata goes
/// through its typed form only when it differs from the stored one (the request's
/// managedFields). The object is neither copied nor decoded whole.
fn admit_status<T: Webhooks>(
    schema: &KindSchema,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), AdmissionError> {
    let others: Vec<String> = obj
        .as_object()
        .map(|m| m.keys().filter(|k| *k != "status").cloned().collect())
        .unwrap_or_default();
    // The registry may leave out what a status write cannot change (a Work's manifests):
    // required members other than status are the stored object's, not this write's.
    let skip: Vec<&str> = others
        .iter()
        .map(String::as_str)
        .chain(schema.root.required().filter(|name| *name != "status"))
        .collect();
    normalize(schema, obj, &skip);
    check_schema(schema, obj, &skip)?;
    if !same_metadata(obj.get("metadata"), old.and_then(|o| o.get("metadata"))) {
        let meta = encode(&decode::<MetadataOf<T>>(obj)?.metadata)?;
        if let Some(map) = obj.as_object_mut() {
            map.insert("metadata".into(), meta);
        }
    }
    Ok(())
}

/// Whether a status write's metadata is the stored metadata (which went through its typed
/// form when written). The resourceVersion is left out: the request's is a precondition,
/// already checked, and the stored one is the store's.
fn same_metadata(new: Option<&Value>, stored: Option<&Value>) -> bool {
    let (Some(Value::Object(new)), Some(Value::Object(stored))) = (new, stored) else {
        return false;
    };
    let compared = |m: &'_ serde_json::Map<String, Value>| {
        m.iter()
            .filter(|(k, _)| k.as_str() != "resourceVersion")
            .count()
    };
    compared(new) == compared(stored)
        && new
            .iter()
            .filter(|(k, _)| k.as_str() != "resourceVersion")
            .all(|(k, v)| stored.get(k) == Some(v))
}

/// The metadata of a `T`, decoded alone (with `T`'s kind in decoding errors).
#[derive(serde::Deserialize)]
struct MetadataOf<T> {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(skip)]
    kind: std::marker::PhantomData<T>,
}

impl<T: k8s_openapi::Resource> k8s_openapi::Resource for MetadataOf<T> {
    const API_VERSION: &'static str = T::API_VERSION;
    const GROUP: &'static str = T::GROUP;
    const KIND: &'static str = T::KIND;
    const VERSION: &'static str = T::VERSION;
    const URL_PATH_SEGMENT: &'static str = T::URL_PATH_SEGMENT;
    type Scope = T::Scope;
}

fn schema_of<T: k8s_openapi::Resource>() -> Result<&'static KindSchema, AdmissionError> {
    kind_schema(T::KIND)
        .ok_or_else(|| AdmissionError::BadRequest(format!("no schema for kind {}", T::KIND)))
}

/// Drops nulls, applies defaults and prunes unknown fields, like the CRD decoder; `skip`
/// names the top-level members left alone.
pub(crate) fn normalize(schema: &KindSchema, obj: &mut Value, skip: &[&str]) {
    schema.root.default_and_drop_nulls(obj, skip);
    let mut pruned = Vec::new();
    schema.root.prune(obj, "", skip, &mut pruned);
}

/// Defaults again after a typed round trip, then validates against the schema.
fn default_and_check(
    schema: &KindSchema,
    obj: &mut Value,
    skip: &[&str],
) -> Result<(), AdmissionError> {
    schema.root.default_and_drop_nulls(obj, skip);
    check_schema(schema, obj, skip)
}

/// Schema validation as a 422 Invalid.
pub(crate) fn check_schema(
    schema: &KindSchema,
    obj: &Value,
    skip: &[&str],
) -> Result<(), AdmissionError> {
    let errors = validate_schema(schema, obj, Checks::All, skip);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(AdmissionError::Invalid(errors))
    }
}

fn validate_schema(
    schema: &KindSchema,
    obj: &Value,
    checks: Checks,
    skip: &[&str],
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    schema.root.validate(obj, "", checks, skip, &mut errors);
    if let Some(meta) = obj.get("metadata")
        && !meta.is_object()
    {
        let actual = crate::schema::json_type_name(meta);
        errors.insert(
            0,
            FieldError::type_invalid(
                "metadata",
                actual,
                format!("metadata in body must be of type object: \"{actual}\""),
            ),
        );
    }
    errors
}

fn decode<T: DeserializeOwned + k8s_openapi::Resource>(value: &Value) -> Result<T, AdmissionError> {
    // Tracking the path allocates for every member decoded, and almost every object decodes:
    // the path is worked out only for the error message.
    if let Ok(typed) = T::deserialize(value) {
        return Ok(typed);
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        AdmissionError::BadRequest(format!(
            "{} in version \"{}\" cannot be handled as a {}: {}",
            T::KIND,
            T::VERSION,
            T::KIND,
            e
        ))
    })
}

fn encode<T: Serialize>(typed: &T) -> Result<Value, AdmissionError> {
    serde_json::to_value(typed).map_err(|e| AdmissionError::BadRequest(e.to_string()))
}

/// Sets a label, replacing any value (MergeLabel).
fn set_label(meta: &mut ObjectMeta, key: &str, value: String) {
    meta.labels
        .get_or_insert_with(Default::default)
        .insert(key.to_owned(), value);
}

/// The value of a label, empty when absent.
fn label<'a>(meta: &'a ObjectMeta, key: &str) -> &'a str {
    meta.labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
        .unwrap_or("")
}

/// Adds a finalizer unless present (controllerutil.AddFinalizer).
fn add_finalizer(meta: &mut ObjectMeta, finalizer: &str) {
    let finalizers = meta.finalizers.get_or_insert_with(Vec::new);
    if !finalizers.iter().any(|f| f == finalizer) {
        finalizers.push(finalizer.to_owned());
    }
}

/// A fresh permanent id: a random UUID.
fn permanent_id() -> String {
    uuid::Uuid::new_v4().to_string()
}
