//! The `kube` library scripts get with `local kube = require("kube")` (Karmada's
//! `luavm/kube.go`): `resourceAdd`, `getResourceQuantity`, `accuratePodRequirements` and
//! `getPodDependencies`. The pod functions are answered by a [`PodLibrary`], so they give
//! exactly what the built-in interpreter computes for a Deployment's pod template.

use std::sync::Arc;

use mlua::{Lua, MultiValue, Table, Value as LuaValue};
use serde_json::Value;

use crate::convert::{from_lua, repair_empty_tables, to_lua};
use crate::quantity::Quantity;

/// What the built-in interpreter knows about pod templates, for the kube library.
pub trait PodLibrary: Send + Sync {
    /// The replica requirements of a pod template (`metadata` + `spec`), as JSON in
    /// ReplicaRequirements form, or `null` when the template asks for nothing
    /// (`helper.GenerateReplicaRequirements`).
    fn replica_requirements(&self, template: &Value) -> Result<Value, String>;

    /// The ConfigMaps, Secrets, ServiceAccounts and PersistentVolumeClaims a pod template
    /// in `namespace` references, as a JSON list of DependentObjectReferences
    /// (`helper.GetDependenciesFromPodTemplate`).
    fn dependencies(&self, template: &Value, namespace: &str) -> Result<Value, String>;
}

/// A library that knows nothing about pods: `accuratePodRequirements` gives nil and
/// `getPodDependencies` an empty list. For tools that run scripts without the built-in
/// interpreter.
pub struct NoPods;

impl PodLibrary for NoPods {
    fn replica_requirements(&self, _template: &Value) -> Result<Value, String> {
        Ok(Value::Null)
    }

    fn dependencies(&self, _template: &Value, _namespace: &str) -> Result<Value, String> {
        Ok(Value::Array(Vec::new()))
    }
}

fn type_error(position: usize, function: &str, expected: &str, got: &LuaValue) -> mlua::Error {
    mlua::Error::runtime(format!(
        "bad argument #{position} to '{function}' ({expected} expected, got {})",
        lua_type(got)
    ))
}

/// The Lua type name of a value (mlua calls integral numbers "integer").
pub(crate) fn lua_type(v: &LuaValue) -> &'static str {
    match v {
        LuaValue::Integer(_) | LuaValue::Number(_) => "number",
        other => other.type_name(),
    }
}

/// A quantity argument: nil is zero, a string is parsed, anything else is a type error
/// (`checkResourceQuantity`).
fn quantity_arg(position: usize, function: &str, v: &LuaValue) -> mlua::Result<Quantity> {
    match v {
        LuaValue::Nil => Ok(Quantity::default()),
        LuaValue::String(s) => Quantity::parse(&s.to_str()?).map_err(mlua::Error::runtime),
        other => Err(type_error(position, function, "string", other)),
    }
}

/// A table argument as JSON, with the empty tables Lua cannot tell apart dropped (as
/// `ConvertLuaResultInto` without references does).
fn table_arg(position: usize, function: &str, v: &LuaValue) -> mlua::Result<Value> {
    let LuaValue::Table(_) = v else {
        return Err(type_error(position, function, "table", v));
    };
    let mut json = from_lua(v).map_err(|e| {
        mlua::Error::runtime(format!("fail to convert lua value to PodTemplateSpec: {e}"))
    })?;
    repair_empty_tables(&mut json, true, &[]);
    if !json.is_object() {
        return Err(mlua::Error::runtime(
            "fail to convert lua value to PodTemplateSpec: not an object",
        ));
    }
    Ok(json)
}

/// Builds the module table.
pub(crate) fn module(lua: &Lua, pods: &Arc<dyn PodLibrary>) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.raw_set(
        "resourceAdd",
        lua.create_function(|_, args: MultiValue| {
            let mut sum = Quantity::default();
            for (i, a) in args.iter().enumerate() {
                sum.add(&quantity_arg(i + 1, "resourceAdd", a)?)
                    .map_err(mlua::Error::runtime)?;
            }
            Ok(sum.to_string())
        })?,
    )?;
    m.raw_set(
        "getResourceQuantity",
        lua.create_function(|_, args: MultiValue| {
            if args.len() != 1 {
                return Err(mlua::Error::runtime(
                    "getResourceQuantity only accepts one argument",
                ));
            }
            let q = quantity_arg(1, "getResourceQuantity", &args[0])?;
            let n = q.approximate_f64();
            if n < 0.0 {
                return Err(mlua::Error::runtime(format!(
                    "int approximation unexpectedly returned a negative value: {q}"
                )));
            }
            if n.is_infinite() {
                return Err(mlua::Error::runtime(format!(
                    "int approximation unexpectedly returned an infinite value: {q}"
                )));
            }
            Ok(n)
        })?,
    )?;
    let p = pods.clone();
    m.raw_set(
        "accuratePodRequirements",
        lua.create_function(move |lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(mlua::Error::runtime(
                    "getPodRequirements only accepts one argument",
                ));
            }
            let template = table_arg(1, "accuratePodRequirements", &args[0])?;
            let requirements = p.replica_requirements(&template).map_err(|e| {
                mlua::Error::runtime(format!("fail to convert lua value to PodTemplateSpec: {e}"))
            })?;
            to_lua(lua, &requirements)
        })?,
    )?;
    let p = pods.clone();
    m.raw_set(
        "getPodDependencies",
        lua.create_function(move |lua, args: MultiValue| {
            if args.len() != 2 {
                return Err(mlua::Error::runtime(
                    "getPodDependencies only accepts two argument",
                ));
            }
            let template = table_arg(1, "getPodDependencies", &args[0])?;
            let namespace = match &args[1] {
                LuaValue::Nil => "default".to_owned(),
                LuaValue::String(s) => s.to_str()?.to_owned(),
                LuaValue::Integer(i) => i.to_string(),
                LuaValue::Number(n) => n.to_string(),
                other => return Err(type_error(2, "getPodDependencies", "string", other)),
            };
            let deps = p.dependencies(&template, &namespace).map_err(|e| {
                mlua::Error::runtime(format!(
                    "fail to convert lua value to corev1.PodTemplateSpec: {e}"
                ))
            })?;
            to_lua(lua, &deps)
        })?,
    )?;
    Ok(m)
}
