//! Karmada's native resource interpreter (`pkg/resourceinterpreter/default/native`): how
//! replicas, retained fields, status, health and dependencies of built-in kinds are read and
//! written. Every function works on JSON objects and is keyed by the object's apiVersion and kind;
//! kinds without a rule behave as Karmada treats them (no replicas, nothing retained, the whole
//! status reflected, healthy, no aggregation, no dependencies).

mod aggregate;
pub mod declarative;
mod dependencies;
mod pods;
mod quantity;
mod replicas;
mod resource;
mod retain;
mod status;
pub mod thirdparty;
pub mod webhook;

use serde_json::{Map, Value};

pub use aggregate::aggregate_status;
pub use dependencies::get_dependencies;
pub use pods::NativePods;
pub use quantity::{format_binary_si, format_decimal_si};
pub use replicas::{
    divide_job_completions, generate_replica_requirements, get_replicas, revise_job_completions,
    revise_replica,
};
pub use resource::ResourceInterpreter;
pub use retain::{retain, retain_cluster_fields};
pub use status::{interpret_health, reflect_status};

/// Why interpreting an object failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterpreterError {
    /// A customization's script failed, or returned something unusable.
    #[error("{operation} of {origin} failed: {error}")]
    Script {
        /// Who defined the script, e.g. `ResourceInterpreterCustomization(workloads)`.
        origin: String,
        /// The operation, e.g. `InterpretHealth`.
        operation: &'static str,
        /// What went wrong.
        error: lua::LuaError,
    },
    /// An interpreter webhook failed or answered wrongly.
    #[error("{operation} by interpreter webhook failed: {message}")]
    Webhook {
        /// The operation, e.g. `InterpretReplica`.
        operation: &'static str,
        /// What went wrong.
        message: String,
    },
    /// A field has the wrong type or value.
    #[error("{kind} {name}: {message}")]
    Malformed {
        /// Kind of the object.
        kind: String,
        /// namespace/name of the object.
        name: String,
        /// What is wrong.
        message: String,
    },
}

impl InterpreterError {
    /// A script's result that cannot be used.
    pub(crate) fn result(
        s: &declarative::ScriptRef,
        op: lua::Operation,
        message: impl Into<String>,
    ) -> Self {
        InterpreterError::Script {
            origin: s.origin.clone(),
            operation: op.name(),
            error: lua::LuaError::Result(message.into()),
        }
    }

    pub(crate) fn malformed(object: &Value, message: impl Into<String>) -> Self {
        let name = match (
            str_at(object, &["metadata", "namespace"]),
            str_at(object, &["metadata", "name"]),
        ) {
            ("", n) => n.to_string(),
            (ns, n) => format!("{ns}/{n}"),
        };
        InterpreterError::Malformed {
            kind: str_at(object, &["kind"]).to_string(),
            name,
            message: message.into(),
        }
    }
}

/// An object a workload depends on (Karmada `configv1alpha1.DependentObjectReference`), in the
/// JSON form of the `resourcebinding.karmada.io/dependencies` annotation.
pub use karmada_api::config::v1alpha1::DependentObjectReference;

/// The operations of the resource interpreter (Karmada `InterpreterOperation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// GetReplicas.
    InterpretReplica,
    /// ReviseReplica.
    ReviseReplica,
    /// Retain.
    Retain,
    /// AggregateStatus.
    AggregateStatus,
    /// ReflectStatus (always available: the whole status by default).
    InterpretStatus,
    /// InterpretHealth.
    InterpretHealth,
    /// GetDependencies.
    InterpretDependency,
}

/// The built-in kinds with native rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NativeKind {
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    Job,
    CronJob,
    Pod,
    Service,
    ServiceAccount,
    PersistentVolumeClaim,
    PersistentVolume,
    Secret,
    Ingress,
    PodDisruptionBudget,
    HorizontalPodAutoscaler,
    ServiceImport,
}

impl NativeKind {
    /// The kind of a group/version and kind, if it has native rules (keyed by exact GVK, so
    /// e.g. autoscaling/v1 HPAs have none).
    pub(crate) fn of(api_version: &str, kind: &str) -> Option<Self> {
        use NativeKind::*;
        Some(match (api_version, kind) {
            ("apps/v1", "Deployment") => Deployment,
            ("apps/v1", "ReplicaSet") => ReplicaSet,
            ("apps/v1", "StatefulSet") => StatefulSet,
            ("apps/v1", "DaemonSet") => DaemonSet,
            ("batch/v1", "Job") => Job,
            ("batch/v1", "CronJob") => CronJob,
            ("v1", "Pod") => Pod,
            ("v1", "Service") => Service,
            ("v1", "ServiceAccount") => ServiceAccount,
            ("v1", "PersistentVolumeClaim") => PersistentVolumeClaim,
            ("v1", "PersistentVolume") => PersistentVolume,
            ("v1", "Secret") => Secret,
            ("networking.k8s.io/v1", "Ingress") => Ingress,
            ("policy/v1", "PodDisruptionBudget") => PodDisruptionBudget,
            ("autoscaling/v2", "HorizontalPodAutoscaler") => HorizontalPodAutoscaler,
            ("multicluster.x-k8s.io/v1alpha1", "ServiceImport") => ServiceImport,
            _ => return None,
        })
    }

    pub(crate) fn of_object(object: &Value) -> Option<Self> {
        Self::of(str_at(object, &["apiVersion"]), str_at(object, &["kind"]))
    }
}

/// Whether the native interpreter has a rule for an operation on a kind (Karmada
/// `DefaultInterpreter.HookEnabled`). Callers use it as Karmada does: replicas and requirements
/// only from kinds with InterpretReplica, replicas revised only with ReviseReplica, fields
/// retained only with Retain, health Healthy for kinds without InterpretHealth.
pub fn hook_enabled(api_version: &str, kind: &str, operation: Operation) -> bool {
    use NativeKind::*;
    let Some(k) = NativeKind::of(api_version, kind) else {
        return operation == Operation::InterpretStatus;
    };
    match operation {
        Operation::InterpretReplica => {
            matches!(k, Deployment | ReplicaSet | StatefulSet | Job | Pod)
        }
        Operation::ReviseReplica => matches!(k, Deployment | ReplicaSet | StatefulSet | Job),
        Operation::Retain => matches!(
            k,
            Deployment
                | Pod
                | Service
                | ServiceAccount
                | PersistentVolumeClaim
                | PersistentVolume
                | Job
                | Secret
        ),
        Operation::AggregateStatus => !matches!(k, ServiceAccount | Secret | ServiceImport),
        Operation::InterpretStatus => true,
        Operation::InterpretHealth => matches!(
            k,
            Deployment
                | StatefulSet
                | ReplicaSet
                | DaemonSet
                | Service
                | Ingress
                | PersistentVolumeClaim
                | Pod
                | PodDisruptionBudget
        ),
        Operation::InterpretDependency => matches!(
            k,
            Deployment
                | ReplicaSet
                | Job
                | CronJob
                | Pod
                | DaemonSet
                | StatefulSet
                | Ingress
                | ServiceImport
        ),
    }
}

/// The value at a path of object keys.
pub(crate) fn get<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, k| v.get(*k))
}

/// The string at a path, or "".
pub(crate) fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    get(value, path).and_then(Value::as_str).unwrap_or("")
}

/// The integer at a path, or 0 (a typed Go field's zero value).
pub(crate) fn int_at(value: &Value, path: &[&str]) -> i64 {
    get(value, path).and_then(Value::as_i64).unwrap_or(0)
}

/// The integer at a path, `None` when absent, an error when not an integer
/// (`unstructured.NestedInt64`).
pub(crate) fn nested_int(object: &Value, path: &[&str]) -> Result<Option<i64>, InterpreterError> {
    match get(object, path) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or_else(|| {
            InterpreterError::malformed(
                object,
                format!(".{} accessor error: {v} is not an integer", path.join(".")),
            )
        }),
    }
}

/// Sets a value at a path, creating intermediate objects (`unstructured.SetNestedField`);
/// fails when an intermediate value is not an object.
pub(crate) fn set(value: &mut Value, path: &[&str], new: Value) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut cur = value;
    for key in parents {
        let Some(obj) = cur.as_object_mut() else {
            return false;
        };
        cur = obj
            .entry((*key).to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    match cur.as_object_mut() {
        Some(obj) => {
            obj.insert((*last).to_string(), new);
            true
        }
        None => false,
    }
}

/// Removes the value at a path, if there.
pub(crate) fn remove(value: &mut Value, path: &[&str]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let parent = parents.iter().try_fold(value, |v, k| v.get_mut(*k));
    if let Some(Value::Object(obj)) = parent {
        obj.remove(*last);
    }
}

/// Sets a value, or removes the field when the value is Go's zero value for an `omitempty` field.
pub(crate) fn set_or_remove(value: &mut Value, path: &[&str], new: Value) {
    let empty = match &new {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    };
    if empty {
        remove(value, path);
    } else {
        set(value, path, new);
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod customized_tests;
