//! API Priority and Fairness's configuration objects, as kube-apiserver keeps them: the
//! ensurer (k8s.io/kubernetes pkg/registry/flowcontrol/ensurer) creates the bootstrap
//! FlowSchemas and PriorityLevelConfigurations, restores the mandatory ones whenever they are
//! changed or deleted, keeps the suggested ones up to date unless their
//! `apf.kubernetes.io/autoupdate-spec` annotation says otherwise, and removes objects it
//! maintained that the configuration no longer has; the config consumer
//! (k8s.io/apiserver pkg/util/flowcontrol/apf_controller.go) hands the objects to the flow
//! controller and writes each FlowSchema's `Dangling` condition. Both run at start and again
//! whenever one of the objects changes. Beside them, as kube's controller's periodic
//! rebalancing, the levels' current limits are adjusted to their demand every borrowing
//! adjustment period.

use std::collections::BTreeSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use flowcontrol::bootstrap::{self, AUTO_UPDATE_ANNOTATION};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::options::DeleteOptions;
use crate::registry::{Registry, Subresource, WriteContext};
use crate::resources::ResourceDef;
use crate::state::ApiState;
use crate::watch_cache::{EventReceiver, Filter, RecvError, TryRecvError};

const GROUP: &str = "flowcontrol.apiserver.k8s.io";
/// The field manager of the ensurer's writes.
const PRODUCER: &str = "api-priority-and-fairness-config-producer-v1";
/// The field manager of the status writes.
const CONSUMER: &str = "api-priority-and-fairness-config-consumer-v1";
/// How long a burst of changes may settle before the objects are read again.
const SETTLE: Duration = Duration::from_millis(5);
/// How often the loop wakes without changes (to notice a dropped state).
const LIVENESS: Duration = Duration::from_secs(1);

/// The served PriorityLevelConfigurations and FlowSchemas.
fn defs(state: &ApiState) -> Result<[Arc<ResourceDef>; 2], ApiError> {
    let snapshot = state.catalog.snapshot();
    let get = |plural: &str| {
        snapshot
            .get(GROUP, "v1", plural)
            .cloned()
            .ok_or_else(|| ApiError::internal(format!("{plural}.{GROUP} are not served")))
    };
    Ok([get("prioritylevelconfigurations")?, get("flowschemas")?])
}

fn cached(state: &ApiState, def: &Arc<ResourceDef>) -> Result<Vec<Value>, ApiError> {
    Ok(state.cache(def)?.all().iter().map(|o| o.value()).collect())
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// Go's strconv.ParseBool.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// kube's shouldUpdateSpec: the annotation decides; without a valid one, an object nobody
/// changed since the server created it (generation 1) is still the server's.
fn auto_updates(existing: &Value) -> bool {
    match annotation(existing, AUTO_UPDATE_ANNOTATION).and_then(parse_bool) {
        Some(b) => b,
        None => {
            existing
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                == Some(1)
        }
    }
}

/// What the ensurer writes over `existing` to make it `wanted`, if anything: the wanted spec
/// and the annotation saying the server maintains it.
fn ensured(existing: &Value, wanted: &Value, mandatory: bool) -> Option<Value> {
    if !mandatory && !auto_updates(existing) {
        return None;
    }
    let spec_ok = existing.get("spec") == wanted.get("spec");
    let annotated = annotation(existing, AUTO_UPDATE_ANNOTATION) == Some("true");
    if spec_ok && annotated {
        return None;
    }
    let mut next = existing.clone();
    next["spec"] = wanted.get("spec").cloned().unwrap_or(Value::Null);
    if let Some(meta) = next.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        annotations[AUTO_UPDATE_ANNOTATION] = json!("true");
    }
    Some(next)
}

fn name(obj: &Value) -> &str {
    crate::object::name(obj)
}

/// One pass of the ensurer over one resource.
async fn ensure_kind(
    state: &ApiState,
    def: &Arc<ResourceDef>,
    mandatory: Vec<Value>,
    suggested: Vec<Value>,
) -> Result<(), ApiError> {
    let reg = Registry::new(state, def.clone());
    let ctx = WriteContext {
        manager: PRODUCER.into(),
        dry_run: false,
        apply: false,
    };
    let existing = cached(state, def)?;
    let wanted: Vec<(Value, bool)> = mandatory
        .into_iter()
        .map(|o| (o, true))
        .chain(suggested.into_iter().map(|o| (o, false)))
        .collect();
    for (obj, is_mandatory) in &wanted {
        let n = name(obj).to_string();
        match existing.iter().find(|e| name(e) == n) {
            None => match reg.create("", obj.clone(), &ctx).await {
                Ok(_) => {
                    tracing::info!(kind = %def.kind, name = %n, "created bootstrap flow control object")
                }
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            },
            Some(current) => {
                if ensured(current, obj, *is_mandatory).is_none() {
                    continue;
                }
                tracing::info!(kind = %def.kind, name = %n, mandatory = is_mandatory, "restoring bootstrap flow control object");
                let update = reg
                    .guaranteed_update("", &n, Subresource::Main, &ctx, |cur| {
                        Ok(ensured(cur, obj, *is_mandatory).unwrap_or_else(|| cur.clone()))
                    })
                    .await;
                match update {
                    Ok(_) => {}
                    // Deleted meanwhile: the next pass creates it.
                    Err(e) if e.code == 404 || e.code == 409 => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    // Objects the server maintained that its configuration no longer has.
    let known: BTreeSet<&str> = wanted.iter().map(|(o, _)| name(o)).collect();
    for obj in &existing {
        if annotation(obj, AUTO_UPDATE_ANNOTATION) == Some("true") && !known.contains(name(obj)) {
            tracing::info!(kind = %def.kind, name = %name(obj), "removing flow control object no longer in the bootstrap configuration");
            match reg.delete("", name(obj), &DeleteOptions::default()).await {
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// The ensurer: levels first, so that the schemas never name a missing one.
pub async fn ensure(state: &ApiState) -> Result<(), ApiError> {
    let [levels, schemas] = defs(state)?;
    ensure_kind(
        state,
        &levels,
        bootstrap::mandatory_priority_levels(),
        bootstrap::suggested_priority_levels(),
    )
    .await?;
    ensure_kind(
        state,
        &schemas,
        bootstrap::mandatory_flow_schemas(),
        bootstrap::suggested_flow_schemas(),
    )
    .await
}

/// The `Dangling` condition kube's config consumer writes on a FlowSchema.
fn dangling_condition(level: &str, found: bool) -> (&'static str, &'static str, String) {
    if found {
        (
            "False",
            "Found",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists"
            ),
        )
    } else {
        (
            "True",
            "NotFound",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named {level:?} but there is no such object"
            ),
        )
    }
}

/// `fs` with its `Dangling` condition set, if it changes.
fn with_dangling(fs: &Value, levels: &BTreeSet<String>) -> Option<Value> {
    let level = fs
        .pointer("/spec/priorityLevelConfiguration/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let (status, reason, message) = dangling_condition(level, levels.contains(level));
    let conditions = fs
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let current = conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Dangling"));
    let same = |c: &Value, k: &str, v: &str| c.get(k).and_then(Value::as_str) == Some(v);
    if current.is_some_and(|c| {
        same(c, "status", status) && same(c, "reason", reason) && same(c, "message", &message)
    }) {
        return None;
    }
    let condition = json!({
        "type": "Dangling",
        "status": status,
        "lastTransitionTime": apimachinery::meta::now_rfc3339(),
        "reason": reason,
        "message": message,
    });
    let mut next = fs.clone();
    let mut conditions: Vec<Value> = conditions
        .into_iter()
        .filter(|c| c.get("type").and_then(Value::as_str) != Some("Dangling"))
        .collect();
    conditions.push(condition);
    next["status"] = json!({"conditions": conditions});
    Some(next)
}

/// The config consumer: hands the objects to the flow controller and writes the schemas'
/// `Dangling` conditions.
pub async fn consume(state: &ApiState, fc: &flowcontrol::FlowControl) -> Result<(), ApiError> {
    let [levels_def, schemas_def] = defs(state)?;
    let levels = cached(state, &levels_def)?;
    let schemas = cached(state, &schemas_def)?;
    fc.apply(flowcontrol::Configuration::from_objects(&schemas, &levels));
    let names: BTreeSet<String> = levels.iter().map(|l| name(l).to_string()).collect();
    let reg = Registry::new(state, schemas_def);
    let ctx = WriteContext {
        manager: CONSUMER.into(),
        dry_run: false,
        apply: false,
    };
    for fs in &schemas {
        if with_dangling(fs, &names).is_none() {
            continue;
        }
        let written = reg
            .guaranteed_status_update("", name(fs), &ctx, |cur| {
                Ok(with_dangling(cur, &names).unwrap_or_else(|| cur.clone()))
            })
            .await;
        match written {
            Ok(_) => {}
            Err(e) if e.code == 404 || e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

async fn pass(state: &ApiState) {
    if let Err(e) = ensure(state).await {
        tracing::warn!(error = %e, "ensuring the flow control configuration failed");
    }
    if let Some(fc) = &state.flow_control
        && let Err(e) = consume(state, fc).await
    {
        tracing::warn!(error = %e, "applying the flow control configuration failed");
    }
}

fn subscribe(state: &ApiState) -> Result<[EventReceiver; 2], ApiError> {
    let [a, b] = defs(state)?;
    let sub = |def: &Arc<ResourceDef>| -> Result<EventReceiver, ApiError> {
        let cache = state.cache(def)?;
        cache
            .subscribe(Some(cache.revision()), &Filter::default())
            .map(|s| s.rx)
            .map_err(|e| ApiError::internal(format!("{e:?}")))
    };
    Ok([sub(&a)?, sub(&b)?])
}

enum Wake {
    Changed,
    Closed,
    Idle,
}

async fn next(subs: &mut [EventReceiver; 2]) -> Wake {
    let [a, b] = subs;
    let one = |r: Result<_, RecvError>| match r {
        Ok(_) | Err(RecvError::Lagged) => Wake::Changed,
        Err(RecvError::Closed) => Wake::Closed,
    };
    tokio::select! {
        r = a.recv() => one(r),
        r = b.recv() => one(r),
        _ = tokio::time::sleep(LIVENESS) => Wake::Idle,
    }
}

/// Drains pending events; true when a channel closed.
fn drain(subs: &mut [EventReceiver; 2]) -> bool {
    let mut closed = false;
    for rx in subs.iter_mut() {
        loop {
            match rx.try_recv() {
                Ok(_) | Err(TryRecvError::Lagged) => {}
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Closed) => {
                    closed = true;
                    break;
                }
            }
        }
    }
    closed
}

/// Adjusts the priority levels' current limits every borrowing adjustment period, for as long
/// as the server runs (kube runs `updateBorrowing` with `wait.Until`: the period counts from
/// the end of the last adjustment).
pub fn spawn_borrowing(state: Weak<ApiState>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(flowcontrol::BORROWING_ADJUSTMENT_PERIOD).await;
            let Some(st) = state.upgrade() else { return };
            if let Some(fc) = &st.flow_control {
                fc.update_borrowing();
            }
        }
    })
}

/// Runs the ensurer and the config consumer once, then again on every change.
pub fn spawn(state: Weak<ApiState>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(50);
        'subscribe: loop {
            let Some(st) = state.upgrade() else { return };
            let mut subs = match subscribe(&st) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot watch the flow control objects; retrying");
                    drop(st);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            // Changes before these subscriptions are picked up here.
            pass(&st).await;
            drop(st);
            loop {
                match next(&mut subs).await {
                    Wake::Idle => continue,
                    Wake::Closed => continue 'subscribe,
                    Wake::Changed => {}
                }
                tokio::time::sleep(SETTLE).await;
                let closed = drain(&mut subs);
                let Some(st) = state.upgrade() else { return };
                pass(&st).await;
                if closed {
                    continue 'subscribe;
                }
                backoff = Duration::from_millis(50);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggested_objects_follow_the_annotation_and_generation() {
        let wanted = json!({"metadata": {"name": "x"}, "spec": {"a": 1}});
        let with = |ann: Option<&str>, generation: i64| {
            let mut o =
                json!({"metadata": {"name": "x", "generation": generation}, "spec": {"a": 2}});
            if let Some(a) = ann {
                o["metadata"]["annotations"] = json!({AUTO_UPDATE_ANNOTATION: a});
            }
            o
        };
        assert!(ensured(&with(Some("true"), 5), &wanted, false).is_some());
        assert!(ensured(&with(Some("false"), 1), &wanted, false).is_none());
        // No (or no valid) annotation: the server's only while nobody changed it.
        assert!(ensured(&with(None, 1), &wanted, false).is_some());
        assert!(ensured(&with(Some("maybe"), 2), &wanted, false).is_none());
        // Mandatory objects are restored whatever they say.
        let restored = ensured(&with(Some("false"), 7), &wanted, true).expect("restored");
        assert_eq!(restored["spec"], json!({"a": 1}));
        assert_eq!(
            restored["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION],
            "true"
        );
        // Nothing to do when it already is as wanted.
        let mut same = wanted.clone();
        same["metadata"]["annotations"] = json!({AUTO_UPDATE_ANNOTATION: "true"});
        assert!(ensured(&same, &wanted, true).is_none());
    }

    #[test]
    fn dangling_conditions_say_whether_the_level_exists() {
        let fs = json!({"metadata": {"name": "f"}, "spec": {"priorityLevelConfiguration": {"name": "gone"}}});
        let levels: BTreeSet<String> = ["exempt".to_string()].into();
        let next = with_dangling(&fs, &levels).expect("set");
        let c = &next["status"]["conditions"][0];
        assert_eq!(
            (
                c["type"].as_str(),
                c["status"].as_str(),
                c["reason"].as_str()
            ),
            (Some("Dangling"), Some("True"), Some("NotFound"))
        );
        assert_eq!(
            c["message"],
            "This FlowSchema references the PriorityLevelConfiguration object named \"gone\" but there is no such object"
        );
        // Written once: the same condition is not written again.
        assert!(with_dangling(&next, &levels).is_none());
        let found: BTreeSet<String> = ["gone".to_string()].into();
        let again = with_dangling(&next, &found).expect("changed");
        assert_eq!(again["status"]["conditions"][0]["reason"], "Found");
        assert_eq!(
            again["status"]["conditions"].as_array().map(Vec::len),
            Some(1)
        );
    }
}
