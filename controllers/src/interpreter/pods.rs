//! The built-in interpreter's pod-template rules offered to Lua scripts (the `kube` library's
//! `accuratePodRequirements` and `getPodDependencies`).

use serde_json::Value;

use super::dependencies::pod_dependencies;
use super::replicas::generate_replica_requirements;

/// Answers the kube library's pod questions as the built-in interpreter answers them for a
/// Deployment's pod template.
pub struct NativePods;

impl lua::PodLibrary for NativePods {
    fn replica_requirements(&self, template: &Value) -> Result<Value, String> {
        let empty = Value::Object(Default::default());
        let spec = template.get("spec").unwrap_or(&empty);
        let requirements = generate_replica_requirements(spec)?;
        serde_json::to_value(requirements).map_err(|e| e.to_string())
    }

    fn dependencies(&self, template: &Value, namespace: &str) -> Result<Value, String> {
        serde_json::to_value(pod_dependencies(template.get("spec"), namespace))
            .map_err(|e| e.to_string())
    }
}
