//! Lean cached forms of the most numerous control-plane objects. A Work carries a whole manifest;
//! caching tens of thousands of them as `serde_json::Value` trees would dominate the process's
//! memory, so the cache keeps each manifest as text ([`RawObject`]) and parses it when needed.

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::names;
use karmada_api::well_known::labels;
use karmada_api::work::v1alpha1::{WORK_APPLIED, WorkStatus};
use serde::Deserialize;

use super::object::{Key, RawObject};

/// A Work as the controllers cache it.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct CachedWork {
    /// Metadata (managedFields dropped).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The manifests and dispatch settings.
    #[serde(default)]
    pub spec: CachedWorkSpec,
    /// The observed status.
    #[serde(default)]
    pub status: WorkStatus,
}

/// The spec of a cached Work.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedWorkSpec {
    /// The manifests.
    #[serde(default)]
    pub workload: CachedWorkload,
    /// Dispatching suspended.
    #[serde(default)]
    pub suspend_dispatching: Option<bool>,
    /// Keep member objects when the Work goes.
    #[serde(default)]
    pub preserve_resources_on_deletion: Option<bool>,
}

/// The manifests of a cached Work.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct CachedWorkload {
    /// The manifests as text.
    #[serde(default)]
    pub manifests: Vec<RawObject>,
}

impl k8s_openapi::Resource for CachedWork {
    const API_VERSION: &'static str = "work.karmada.io/v1alpha1";
    const GROUP: &'static str = "work.karmada.io";
    const KIND: &'static str = "Work";
    const VERSION: &'static str = "v1alpha1";
    const URL_PATH_SEGMENT: &'static str = "works";
    type Scope = NamespaceResourceScope;
}

impl k8s_openapi::ListableResource for CachedWork {
    const LIST_KIND: &'static str = "WorkList";
}

impl k8s_openapi::Metadata for CachedWork {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl CachedWork {
    /// Namespace/name.
    pub fn key(&self) -> Key {
        Key::of(&self.metadata)
    }

    /// The member cluster of the Work's execution space.
    pub fn cluster(&self) -> Option<&str> {
        names::cluster_name_from_execution_space(self.metadata.namespace.as_deref()?).ok()
    }

    /// Dispatching suspended.
    pub fn suspended(&self) -> bool {
        self.spec.suspend_dispatching.unwrap_or(false)
    }

    /// Member objects kept on deletion.
    pub fn preserve(&self) -> bool {
        self.spec.preserve_resources_on_deletion.unwrap_or(false)
    }

    /// True when the Applied condition is True.
    pub fn applied(&self) -> bool {
        super::condition_status(&self.status.conditions, WORK_APPLIED) == Some("True")
    }

    /// True when being deleted.
    pub fn deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    /// The permanent id of the ResourceBinding or ClusterResourceBinding it came from.
    pub fn binding_id(&self) -> Option<&str> {
        super::label(&self.metadata, labels::RESOURCE_BINDING_PERMANENT_ID).or_else(|| {
            super::label(
                &self.metadata,
                labels::CLUSTER_RESOURCE_BINDING_PERMANENT_ID,
            )
        })
    }
}
