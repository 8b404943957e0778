//! `POST .../pods/NAME/eviction` (a policy/v1 Eviction): a pod deletion that respects its
//! PodDisruptionBudget, as kube's EvictionREST does (pkg/registry/core/pod/storage/
//! eviction.go). Pending and finished pods are deleted at once; otherwise the one budget
//! covering the pod must allow a disruption, which the eviction takes (decrementing
//! `disruptionsAllowed` and recording the pod in `disruptedPods`) before the pod gets the
//! DisruptionTarget condition and is deleted. Budgets are kept current by kube's disruption
//! controller, which a Karmada control plane does not run: a budget whose status nothing has
//! written refuses evictions, as kube's does before its controller has seen the budget.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use serde_json::{Value, json};

use crate::auth::rbac::aggregation::selector_matches;
use crate::error::{ApiError, Cause};
use crate::handler::{Ctx, json_response, read_body, request_media};
use crate::managed_fields::Subresource;
use crate::options::{DeleteOptions, ListOptions, OptionsKind, WriteContext, WriteOptions};
use crate::registry::Registry;
use crate::resources::ResourceDef;

const REFUSED: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn int_at(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// The v1 resource of `group` (pods, poddisruptionbudgets).
fn served(ctx: &Ctx, group: &str, plural: &str) -> Result<Arc<ResourceDef>, ApiError> {
    let version = "v1";
    ctx.chain
        .state
        .catalog
        .snapshot()
        .get(group, version, plural)
        .cloned()
        .ok_or_else(|| ApiError::unknown_resource(group, version, plural))
}

/// canIgnorePDB: a pod that is pending, finished or already terminating disrupts nothing.
fn can_ignore_budget(pod: &Value) -> bool {
    matches!(
        str_at(pod, "/status/phase"),
        "Succeeded" | "Failed" | "Pending"
    ) || pod.pointer("/metadata/deletionTimestamp").is_some()
}

fn is_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

fn budget_refusal(message: String, retry_after: u32) -> ApiError {
    ApiError::too_many_requests_because(
        REFUSED,
        Cause {
            reason: "DisruptionBudget".into(),
            message,
            field: String::new(),
        },
        retry_after,
    )
}

/// checkAndDecrement: the budget's new status, or why it refuses.
fn take_disruption(pdb: &Value, pod: &str, now: &str) -> Result<Value, ApiError> {
    let name = str_at(pdb, "/metadata/name");
    let generation = int_at(pdb, "/metadata/generation");
    if int_at(pdb, "/status/observedGeneration") < generation {
        return Err(budget_refusal(still_processing(name), 10));
    }
    let allowed = int_at(pdb, "/status/disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::forbidden_message(
            "policy",
            "poddisruptionbudget",
            name,
            "pdb disruptions allowed is negative".to_string(),
        ));
    }
    let disrupted = pdb
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, |m| m.len());
    if disrupted > 2000 {
        return Err(ApiError::forbidden_message(
            "policy",
            "poddisruptionbudget",
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
                .to_string(),
        ));
    }
    if allowed == 0 {
        return Err(budget_refusal(
            format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                int_at(pdb, "/status/desiredHealthy"),
                int_at(pdb, "/status/currentHealthy")
            ),
            0,
        ));
    }
    let mut next = pdb.clone();
    let status = &mut next["status"];
    status["disruptionsAllowed"] = json!(allowed - 1);
    if !status["disruptedPods"].is_object() {
        status["disruptedPods"] = json!({});
    }
    status["disruptedPods"][pod] = json!(now);
    if allowed == 1 {
        // pdbhelper.UpdateDisruptionAllowedCondition.
        let condition = json!({
            "type": "DisruptionAllowed",
            "status": "False",
            "reason": "InsufficientPods",
            "message": "",
            "observedGeneration": generation,
            "lastTransitionTime": now,
        });
        let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
        let mut kept: Vec<Value> = conditions
            .into_iter()
            .filter(|c| c["type"] != "DisruptionAllowed")
            .collect();
        kept.push(condition);
        status["conditions"] = Value::from(kept);
    }
    Ok(next)
}

/// Serves the eviction of the pod the URL names.
pub async fn create(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    let opts = WriteOptions::parse(&ctx.query, OptionsKind::Create)?;
    let bytes = read_body(ctx, body).await?;
    let eviction = crate::body::decode(&request_media(ctx), &bytes, "Eviction", "v1")?.value;
    if !eviction.is_object() {
        return Err(ApiError::bad_request(
            "Eviction in version \"v1\" cannot be handled as a Eviction: the body is not an object",
        ));
    }
    // kube still decodes the policy/v1beta1 Eviction older clients send.
    match eviction.get("apiVersion").and_then(Value::as_str) {
        None | Some("" | "policy/v1" | "policy/v1beta1") => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "not a Eviction object: the apiVersion {} is neither policy/v1 nor policy/v1beta1",
                crate::auth::rbac::rule::go_quote(other)
            )));
        }
    }
    match eviction.get("kind").and_then(Value::as_str) {
        None | Some("" | "Eviction") => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "not a Eviction object: the kind in the data is {other}"
            )));
        }
    }
    let name = ctx.info.name.as_str();
    if str_at(&eviction, "/metadata/name") != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let body_ns = str_at(&eviction, "/metadata/namespace");
    if !body_ns.is_empty() && body_ns != ctx.ns {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    // The deletion's options are the Eviction's own (the request's query is a create's);
    // propagateDryRun: the request's dryRun applies as well.
    let body_options = eviction.get("deleteOptions").filter(|v| !v.is_null());
    let mut delete = DeleteOptions::parse(&Default::default(), body_options)?;
    delete.dry_run |= opts.dry_run;
    let pods = Registry::new(&ctx.chain.state, served(ctx, "", "pods")?);
    let user_rv = delete.precondition_rv.is_some();
    // A pod that disrupts nothing goes at once, unless it changed since it was read (it may
    // have started running): then it is read again, as kube retries on conflicts.
    let mut attempts = 0;
    let pod = loop {
        let pod = pods.get(&ctx.ns, name).await?;
        if !can_ignore_budget(&pod) {
            break pod;
        }
        let mut options = delete.clone();
        if must_be_unchanged(&pod) && !user_rv {
            options.precondition_rv = Some(str_at(&pod, "/metadata/resourceVersion").into());
        }
        match mark_and_delete(&pods, &ctx.ns, name, options).await {
            Err(e) if e.code == 409 && !user_rv && attempts < EVICTION_RETRIES => attempts += 1,
            done => return done.map(|()| success()),
        }
    };
    let budgets = Registry::new(
        &ctx.chain.state,
        served(ctx, "policy", "poddisruptionbudgets")?,
    );
    let page = budgets
        .list(&ctx.ns, &ListOptions::parse(&Default::default())?)
        .await?;
    let labels = labels_of(&pod);
    let covering: Vec<Value> = page
        .items
        .iter()
        .map(|i| i.value())
        .filter(|pdb| covers(pdb, &labels))
        .collect();
    if covering.len() > 1 {
        // kube answers this as a Failure status rather than an error.
        return Ok(json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {},
                "status": "Failure",
                "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                "code": 500,
            }),
        ));
    }
    let mut options = delete.clone();
    let mut pinned_by_us = false;
    if let Some(pdb) = covering.first() {
        let pdb_name = str_at(pdb, "/metadata/name").to_string();
        let unhealthy_may_go = !is_ready(&pod)
            && (str_at(pdb, "/spec/unhealthyPodEvictionPolicy") == "AlwaysAllow"
                || (int_at(pdb, "/status/currentHealthy")
                    >= int_at(pdb, "/status/desiredHealthy")
                    && int_at(pdb, "/status/desiredHealthy") > 0));
        if unhealthy_may_go {
            // An unready pod takes no disruption, so it must still be the pod looked at.
            if !user_rv {
                options.precondition_rv = Some(str_at(&pod, "/metadata/resourceVersion").into());
                pinned_by_us = true;
            }
        } else if delete.dry_run {
            take_disruption(pdb, name, &apimachinery::meta::now_rfc3339())?;
        } else {
            let wctx = WriteContext::new(&opts, "kube-apiserver");
            budgets
                .guaranteed_update(&ctx.ns, &pdb_name, Subresource::Status, &wctx, |cur| {
                    take_disruption(cur, name, &apimachinery::meta::now_rfc3339())
                })
                .await?;
        }
        match mark_and_delete(&pods, &ctx.ns, name, options).await {
            // The pod changed since the budget was checked: the client should try again.
            Err(e) if e.code == 409 && pinned_by_us => {
                return Err(budget_refusal(still_processing(&pdb_name), 10));
            }
            done => return done.map(|()| success()),
        }
    }
    mark_and_delete(&pods, &ctx.ns, name, options).await?;
    Ok(success())
}

/// How many times an eviction re-reads a pod that changed under it.
const EVICTION_RETRIES: u32 = 5;

fn success() -> Response {
    json_response(
        StatusCode::CREATED,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    )
}

fn still_processing(pdb: &str) -> String {
    format!("The disruption budget {pdb} is still being processed by the server.")
}

/// shouldEnforceResourceVersion: a pending pod could start running (and count for a budget)
/// between its read and its deletion; a finished or terminating one cannot.
fn must_be_unchanged(pod: &Value) -> bool {
    !matches!(str_at(pod, "/status/phase"), "Succeeded" | "Failed")
        && pod.pointer("/metadata/deletionTimestamp").is_none()
}

fn labels_of(pod: &Value) -> BTreeMap<String, String> {
    pod.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// getPodDisruptionBudgets: a budget whose selector is missing or empty covers no pod (not
/// every pod, as an empty selector elsewhere would).
fn covers(pdb: &Value, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = pdb.pointer("/spec/selector").and_then(Value::as_object) else {
        return false;
    };
    let non_empty = |key: &str| {
        selector.get(key).is_some_and(|v| match v {
            Value::Object(m) => !m.is_empty(),
            Value::Array(a) => !a.is_empty(),
            _ => false,
        })
    };
    (non_empty("matchLabels") || non_empty("matchExpressions"))
        && selector_matches(&Value::Object(selector.clone()), labels)
}

/// addConditionAndDeletePod: unless this is a dry run, the pod first gets the
/// DisruptionTarget condition (PodDisruptionConditions, GA) saying why it goes, then is
/// deleted with `options`.
async fn mark_and_delete(
    pods: &Registry<'_>,
    ns: &str,
    name: &str,
    mut options: DeleteOptions,
) -> Result<(), ApiError> {
    if !options.dry_run {
        let updated = pods
            .storage_update(ns, name, false, |cur| {
                pods.check_delete_preconditions(cur, &options)?;
                let mut next = cur.clone();
                crate::handler::binding::set_condition(
                    &mut next,
                    json!({
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "EvictionByEvictionAPI",
                        "message": "Eviction API: evicting",
                    }),
                );
                Ok(next)
            })
            .await?;
        // The condition's write moved the resourceVersion; the precondition follows it, as
        // the write was this eviction's own.
        if options.precondition_rv.is_some() {
            options.precondition_rv = Some(str_at(&updated, "/metadata/resourceVersion").into());
        }
    }
    pods.delete(ns, name, &options).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pdb(allowed: i64, observed: i64) -> Value {
        json!({
            "metadata": {"name": "web", "generation": 2},
            "status": {"observedGeneration": observed, "disruptionsAllowed": allowed,
                       "desiredHealthy": 2, "currentHealthy": 2},
        })
    }

    #[test]
    fn a_budget_gives_one_disruption_at_a_time() {
        let next = take_disruption(&pdb(1, 2), "p1", "2025-01-01T00:00:00Z").unwrap();
        assert_eq!(next["status"]["disruptionsAllowed"], 0);
        assert_eq!(
            next["status"]["disruptedPods"]["p1"],
            "2025-01-01T00:00:00Z"
        );
        assert_eq!(
            next["status"]["conditions"][0]["reason"],
            "InsufficientPods"
        );
        let refused = take_disruption(&next, "p2", "x").unwrap_err();
        assert_eq!(refused.code, 429);
        assert_eq!(refused.message, REFUSED);
        let s = refused.status_json();
        assert_eq!(
            s["details"]["causes"][0]["message"],
            "The disruption budget web needs 2 healthy pods and has 2 currently"
        );
        let stale = take_disruption(&pdb(3, 1), "p", "x").unwrap_err();
        assert_eq!(stale.code, 429);
        assert!(
            stale.status_json()["details"]["causes"][0]["message"]
                .as_str()
                .unwrap()
                .ends_with("is still being processed by the server.")
        );
    }

    #[test]
    fn an_empty_selector_covers_no_pod() {
        let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
        let with = |selector: Value| json!({"spec": {"selector": selector}});
        assert!(covers(
            &with(json!({"matchLabels": {"app": "web"}})),
            &labels
        ));
        assert!(!covers(
            &with(json!({"matchLabels": {"app": "db"}})),
            &labels
        ));
        assert!(!covers(&with(json!({})), &labels));
        assert!(!covers(&with(json!({"matchLabels": {}})), &labels));
        assert!(!covers(&json!({"spec": {}}), &labels));
        assert!(covers(
            &with(json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]})),
            &labels
        ));
    }

    #[test]
    fn only_running_pods_need_a_budget() {
        assert!(can_ignore_budget(&json!({"status": {"phase": "Pending"}})));
        assert!(can_ignore_budget(
            &json!({"status": {"phase": "Succeeded"}})
        ));
        assert!(!can_ignore_budget(&json!({"status": {"phase": "Running"}})));
    }
}
