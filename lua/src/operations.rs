//! The interpreter operations a customization scripts, each calling its Lua function and
//! checking what it returns as Karmada's `luavm.VM` does.

use serde_json::Value;

use crate::convert::repair_empty_tables;
use crate::error::LuaError;
use crate::runtime::{Arg, Returned, Runtime, Script};

/// An operation of a ResourceInterpreterCustomization, in Karmada's rule order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `retention`: `Retain(desiredObj, observedObj)`.
    Retain,
    /// `replicaResource`: `GetReplicas(desiredObj)`.
    InterpretReplica,
    /// `componentResource`: `GetComponents(desiredObj)`.
    InterpretComponent,
    /// `replicaRevision`: `ReviseReplica(desiredObj, desiredReplica)`.
    ReviseReplica,
    /// `statusReflection`: `ReflectStatus(observedObj)`.
    InterpretStatus,
    /// `statusAggregation`: `AggregateStatus(desiredObj, statusItems)`.
    AggregateStatus,
    /// `healthInterpretation`: `InterpretHealth(observedObj)`.
    InterpretHealth,
    /// `dependencyInterpretation`: `GetDependencies(desiredObj)`.
    InterpretDependency,
}

impl Operation {
    /// Every operation, in Karmada's order (`AllResourceInterpreterCustomizationRules`).
    pub const ALL: [Operation; 8] = [
        Operation::Retain,
        Operation::InterpretReplica,
        Operation::InterpretComponent,
        Operation::ReviseReplica,
        Operation::InterpretStatus,
        Operation::AggregateStatus,
        Operation::InterpretHealth,
        Operation::InterpretDependency,
    ];

    /// The operation's name (`InterpreterOperation`).
    pub fn name(self) -> &'static str {
        match self {
            Operation::Retain => "Retain",
            Operation::InterpretReplica => "InterpretReplica",
            Operation::InterpretComponent => "InterpretComponent",
            Operation::ReviseReplica => "ReviseReplica",
            Operation::InterpretStatus => "InterpretStatus",
            Operation::AggregateStatus => "AggregateStatus",
            Operation::InterpretHealth => "InterpretHealth",
            Operation::InterpretDependency => "InterpretDependency",
        }
    }

    /// The global function the script must define.
    pub fn function(self) -> &'static str {
        match self {
            Operation::Retain => "Retain",
            Operation::InterpretReplica => "GetReplicas",
            Operation::InterpretComponent => "GetComponents",
            Operation::ReviseReplica => "ReviseReplica",
            Operation::InterpretStatus => "ReflectStatus",
            Operation::AggregateStatus => "AggregateStatus",
            Operation::InterpretHealth => "InterpretHealth",
            Operation::InterpretDependency => "GetDependencies",
        }
    }

    /// The field of `spec.customizations` holding the operation's script.
    pub fn field(self) -> &'static str {
        match self {
            Operation::Retain => "retention",
            Operation::InterpretReplica => "replicaResource",
            Operation::InterpretComponent => "componentResource",
            Operation::ReviseReplica => "replicaRevision",
            Operation::InterpretStatus => "statusReflection",
            Operation::AggregateStatus => "statusAggregation",
            Operation::InterpretHealth => "healthInterpretation",
            Operation::InterpretDependency => "dependencyInterpretation",
        }
    }

    /// The operation with this name, in any case (`Rules.GetByOperation`).
    pub fn parse(name: &str) -> Option<Operation> {
        Operation::ALL
            .into_iter()
            .find(|o| o.name().eq_ignore_ascii_case(name))
    }
}

fn single(mut r: Vec<Returned>) -> Returned {
    r.pop().unwrap_or(Returned::Nil)
}

/// A returned object that must be a table with a kind (what `unstructured.UnmarshalJSON`
/// accepts), its empty tables repaired from `references`.
fn object_result(r: Returned, references: &[&Value]) -> Result<Value, LuaError> {
    let Returned::Table(mut v) = r else {
        return Err(LuaError::Result(format!(
            "expect the returned requires type is table but got {}",
            r.type_name()
        )));
    };
    repair_empty_tables(&mut v, true, references);
    let has_kind = v
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| !k.is_empty());
    if !v.is_object() || !has_kind {
        return Err(LuaError::Result(format!(
            "Object 'Kind' is missing in '{v}'"
        )));
    }
    Ok(v)
}

/// A returned list (or nil, an empty list).
fn list_result(r: Returned, what: &str) -> Result<Vec<Value>, LuaError> {
    match r {
        Returned::Nil => Ok(Vec::new()),
        Returned::Table(mut v) => {
            repair_empty_tables(&mut v, false, &[]);
            match v {
                Value::Array(items) => Ok(items),
                other => Err(LuaError::Result(format!(
                    "failed to convert lua table for {what}: expected a list, got {other}"
                ))),
            }
        }
        other => Err(LuaError::Result(format!(
            "expected result type 'table' or 'nil' from {what}, but got '{}'",
            other.type_name()
        ))),
    }
}

/// GetReplicas: the declared replicas and, when the script returns them, the requirements of
/// each replica (JSON in ReplicaRequirements form).
pub fn get_replicas(
    rt: &Runtime,
    script: &Script,
    desired: &Value,
) -> Result<(i32, Option<Value>), LuaError> {
    let mut r = rt.call(script, &[Arg::Json(desired)], 2)?.into_iter();
    let replicas = match r.next().unwrap_or(Returned::Nil) {
        // Go's int32(float64) conversion, without its undefined overflow.
        Returned::Number(n) => n.trunc().clamp(i32::MIN as f64, i32::MAX as f64) as i32,
        other => {
            return Err(LuaError::Result(format!(
                "result type {} is not number",
                other.type_name()
            )));
        }
    };
    let requirements = match r.next().unwrap_or(Returned::Nil) {
        Returned::Nil => None,
        Returned::Table(mut v) => {
            repair_empty_tables(&mut v, true, &[]);
            Some(v)
        }
        other => {
            return Err(LuaError::Result(format!(
                "expect the returned requires type is table but got {}",
                other.type_name()
            )));
        }
    };
    Ok((replicas, requirements))
}

/// GetComponents: the components (JSON in Component form).
pub fn get_components(
    rt: &Runtime,
    script: &Script,
    desired: &Value,
) -> Result<Vec<Value>, LuaError> {
    list_result(
        single(rt.call(script, &[Arg::Json(desired)], 1)?),
        "GetComponents",
    )
}

/// ReviseReplica: the object with its replicas set for one member.
pub fn revise_replica(
    rt: &Runtime,
    script: &Script,
    desired: &Value,
    replicas: i64,
) -> Result<Value, LuaError> {
    let r = single(rt.call(
        script,
        &[Arg::Json(desired), Arg::Number(replicas as f64)],
        1,
    )?);
    object_result(r, &[desired])
}

/// Retain: the desired object with what the member owns kept from the observed one.
pub fn retain(
    rt: &Runtime,
    script: &Script,
    desired: &Value,
    observed: &Value,
) -> Result<Value, LuaError> {
    let r = single(rt.call(script, &[Arg::Json(desired), Arg::Json(observed)], 1)?);
    object_result(r, &[desired, observed])
}

/// AggregateStatus: the template with its status aggregated from the members' status items
/// (a JSON list of AggregatedStatusItem, or `null` for none, which the script gets as nil).
pub fn aggregate_status(
    rt: &Runtime,
    script: &Script,
    desired: &Value,
    items: &Value,
) -> Result<Value, LuaError> {
    let r = single(rt.call(script, &[Arg::Json(desired), Arg::Json(items)], 1)?);
    object_result(r, &[])
}

/// InterpretHealth: whether the member object is healthy.
pub fn interpret_health(rt: &Runtime, script: &Script, observed: &Value) -> Result<bool, LuaError> {
    match single(rt.call(script, &[Arg::Json(observed)], 1)?) {
        Returned::Bool(b) => Ok(b),
        other => Err(LuaError::Result(format!(
            "result type {} is not bool",
            other.type_name()
        ))),
    }
}

/// ReflectStatus: the status to record for a member object.
pub fn reflect_status(rt: &Runtime, script: &Script, observed: &Value) -> Result<Value, LuaError> {
    match single(rt.call(script, &[Arg::Json(observed)], 1)?) {
        Returned::Table(mut v) => {
            repair_empty_tables(&mut v, true, &[]);
            Ok(v)
        }
        other => Err(LuaError::Result(format!(
            "expect the returned replica type is table but got {}",
            other.type_name()
        ))),
    }
}

/// GetDependencies: the objects the workload needs (JSON in DependentObjectReference form).
pub fn get_dependencies(
    rt: &Runtime,
    script: &Script,
    desired: &Value,
) -> Result<Vec<Value>, LuaError> {
    match single(rt.call(script, &[Arg::Json(desired)], 1)?) {
        r @ Returned::Table(_) => list_result(r, "GetDependencies"),
        other => Err(LuaError::Result(format!(
            "expect the returned requires type is table but got {}",
            other.type_name()
        ))),
    }
}
