//! The registration point of kinds: what a statically served kind does beyond the generic
//! registry — its table columns, its schema for unknown fields and merges, its conversion
//! between served and stored versions, and its own admission — behind one [`KindStrategy`]
//! per source of kinds. It is kube's `runtime.Scheme` with its install packages
//! (`pkg/apis/*/install`) and conversion functions, the per-resource strategies of
//! k8s.io/apiserver `pkg/registry/rest` (`RESTCreateStrategy`, `RESTUpdateStrategy`,
//! `TableConvertor`) and, for the in-process admission a kind's group brings, k8s.io/apiserver
//! `pkg/admission`'s `ValidationInterface`.
//!
//! Built-in kinds are the registry crate's ([`BuiltIn`], always present). The server above
//! this library registers its own kinds ([`Source::Registered`] resources in the catalog it
//! assembles) and installs their strategy and the delete admission every resource passes ([`install`]) when it
//! assembles the server, before any state is created: like kube's scheme, the table is
//! process-wide, so the conversion and schema helpers need no handle to reach it, and a lookup
//! is one atomic load and a vtable call.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::error::ApiError;
use crate::resources::{ResourceDef, Source};
use apimachinery::openapi::unknown_fields;
use apimachinery::table::{ColumnDefinition, Row, TableConvertor, convertor_for};

/// A write as a kind's own admission sees it (a group's webhooks may not be registered for
/// status, so the status form is told apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOperation {
    /// A create.
    Create,
    /// An update or patch of the main resource (or a Namespace's `finalize`).
    Update,
    /// An update of the `status` subresource.
    UpdateStatus,
}

/// What a source of statically served kinds adds to the generic registry. Every method is
/// asked about one served resource (`def`: group, version, kind).
pub trait KindStrategy: Send + Sync + 'static {
    /// The kind's table printer (`rest.TableConvertor`).
    fn table_convertor(&self, def: &ResourceDef) -> Arc<dyn TableConvertor>;

    /// Removes the fields the kind's schema does not know, as decoding would, and returns
    /// their paths in the order kube reports them (`fieldValidation`).
    fn prune_unknown(&self, def: &ResourceDef, obj: &mut Value) -> Vec<String>;

    /// The OpenAPI v3 schema patches and server-side apply merge with, when the kind has no
    /// compiled-in built-in schema.
    fn openapi_schema(&self, def: &ResourceDef) -> Option<&'static Value>;

    /// Whether objects of the resource are stored in another version of its kind.
    fn converts(&self, def: &ResourceDef) -> bool;

    /// A stored object as the resource serves it; `None` when it is served unchanged.
    fn on_read(&self, def: &ResourceDef, stored: &Value) -> Option<Value>;

    /// A written object converted to the storage version (called only when
    /// [`KindStrategy::converts`]); a value that cannot be converted is the client's error.
    fn to_storage(&self, def: &ResourceDef, obj: &mut Value) -> Result<(), ApiError>;

    /// The kind's own rule for `metadata.name`, beyond the strategy's: the messages of
    /// `metadata.name: Invalid value` causes.
    fn validate_name(&self, def: &ResourceDef, name: &str) -> Vec<String>;

    /// Whether [`KindStrategy::admit`] compares with the other stored objects of the kind.
    fn admission_reads_peers(&self, def: &ResourceDef) -> bool;

    /// The kind's own admission of a validated write (mutating and validating); `peers` are the
    /// stored objects of the kind when [`KindStrategy::admission_reads_peers`].
    fn admit(
        &self,
        def: &ResourceDef,
        op: WriteOperation,
        obj: &mut Value,
        old: Option<&Value>,
        peers: &[Value],
    ) -> Result<(), ApiError>;

    /// Whether admitting a status write reads nothing but `metadata` and `status`.
    fn status_admission_reads_only_status(&self, def: &ResourceDef) -> bool;

    /// API warnings for fields of an admitted main-resource write that have no effect.
    fn warnings(&self, def: &ResourceDef, obj: &Value) -> Vec<String>;
}

/// An in-process admission every delete passes on a control plane, before the dynamic
/// plugins (a `ValidationInterface` for `DELETE`).
pub trait DeleteAdmission: Send + Sync + 'static {
    /// Refuses the deletion of `obj`, a stored object of `def`.
    fn admit_delete(&self, def: &ResourceDef, obj: &Value) -> Result<(), ApiError>;
}

static INSTALLED: OnceLock<&'static dyn KindStrategy> = OnceLock::new();
static DELETE_ADMISSION: OnceLock<&'static dyn DeleteAdmission> = OnceLock::new();

/// Installs the strategy of the registered kinds ([`Source::Registered`]) and the delete
/// admission. The first
/// installation holds for the process (a server assembled again installs the same ones).
pub fn install(kinds: &'static dyn KindStrategy, delete: &'static dyn DeleteAdmission) {
    // Every assembly installs the same ones: a second installation changes nothing.
    let _ = INSTALLED.set(kinds);
    let _ = DELETE_ADMISSION.set(delete);
}

/// The strategy of a resource's kind: the built-in one, the installed one, or none for
/// custom resources (their CRD is their strategy) and for kinds nothing installed.
pub fn for_resource(def: &ResourceDef) -> Option<&'static dyn KindStrategy> {
    match def.source {
        Source::BuiltIn => Some(&BuiltIn),
        Source::Registered { .. } => INSTALLED.get().copied(),
        Source::Custom(_) => None,
    }
}

/// The installed delete admission, if any.
pub fn delete_admission() -> Option<&'static dyn DeleteAdmission> {
    DELETE_ADMISSION.get().copied()
}

/// The built-in kinds' strategy: the registry crate's conversions, apimachinery's printers
/// and shapes. Their defaulting and validation are the registry's `Strategy`, which admission
/// runs for every kind; nothing more is admitted here.
#[derive(Debug, Clone, Copy)]
pub struct BuiltIn;

impl KindStrategy for BuiltIn {
    fn table_convertor(&self, def: &ResourceDef) -> Arc<dyn TableConvertor> {
        Arc::new(StaticConvertor(convertor_for(&def.group, &def.kind)))
    }

    fn prune_unknown(&self, def: &ResourceDef, obj: &mut Value) -> Vec<String> {
        unknown_fields::prune_kind(&def.group, &def.version, &def.kind, obj).unwrap_or_default()
    }

    fn openapi_schema(&self, _def: &ResourceDef) -> Option<&'static Value> {
        None
    }

    fn converts(&self, def: &ResourceDef) -> bool {
        kube_registry::conversion::converts(&def.group, &def.version, &def.kind)
    }

    fn on_read(&self, def: &ResourceDef, stored: &Value) -> Option<Value> {
        kube_registry::conversion::from_storage(&def.group, &def.version, &def.kind, stored)
    }

    fn to_storage(&self, def: &ResourceDef, obj: &mut Value) -> Result<(), ApiError> {
        // A value kube's conversion cannot read fails decoding: a 400.
        kube_registry::conversion::to_storage(&def.group, &def.version, &def.kind, obj).map_err(
            |why| {
                ApiError::bad_request(format!(
                    "{kind} in version \"{version}\" cannot be handled as a {kind}: {why}",
                    kind = def.kind,
                    version = def.version
                ))
            },
        )
    }

    fn validate_name(&self, _def: &ResourceDef, _name: &str) -> Vec<String> {
        Vec::new()
    }

    fn admission_reads_peers(&self, _def: &ResourceDef) -> bool {
        false
    }

    fn admit(
        &self,
        _def: &ResourceDef,
        _op: WriteOperation,
        _obj: &mut Value,
        _old: Option<&Value>,
        _peers: &[Value],
    ) -> Result<(), ApiError> {
        Ok(())
    }

    /// kube's status strategies validate only metadata and status.
    fn status_admission_reads_only_status(&self, _def: &ResourceDef) -> bool {
        true
    }

    fn warnings(&self, _def: &ResourceDef, _obj: &Value) -> Vec<String> {
        Vec::new()
    }
}

/// A compiled-in printer behind the shared convertor type.
struct StaticConvertor(&'static dyn TableConvertor);

impl TableConvertor for StaticConvertor {
    fn columns(&self) -> &[ColumnDefinition] {
        self.0.columns()
    }
    fn row(&self, obj: &Value, now: jiff::Timestamp) -> Row {
        self.0.row(obj, now)
    }
    fn always_sends_headers(&self) -> bool {
        self.0.always_sends_headers()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::served;

    #[test]
    fn built_in_kinds_convert_only_where_kube_stores_another_form() {
        let events = served("events.k8s.io", "events");
        let hpa = served("autoscaling", "horizontalpodautoscalers");
        let pods = served("", "pods");
        let s = for_resource(&pods).expect("built-ins are always there");
        assert!(s.converts(&events));
        assert_eq!(s.converts(&hpa), hpa.version == "v1");
        assert!(!s.converts(&pods));
        assert!(s.status_admission_reads_only_status(&pods));
        assert!(s.warnings(&pods, &serde_json::json!({})).is_empty());
    }

    #[test]
    fn a_bad_built_in_conversion_is_a_bad_request() {
        let hpa = crate::resources::built_in()
            .into_iter()
            .find(|d| d.group == "autoscaling" && d.version == "v1")
            .expect("autoscaling/v1 is served");
        let mut obj = serde_json::json!({"metadata": {"name": "h", "annotations": {
            "autoscaling.alpha.kubernetes.io/metrics": "not json"}}});
        let e = BuiltIn
            .to_storage(&hpa, &mut obj)
            .expect_err("the metrics annotation must be JSON");
        assert_eq!(e.code, 400);
        assert!(
            e.message
                .contains("HorizontalPodAutoscaler in version \"v1\" cannot be handled"),
            "{}",
            e.message
        );
    }
}
