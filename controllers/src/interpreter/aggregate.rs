//! Folding the members' reflected statuses into the resource template's status
//! (`aggregatestatus.go`, `helper.ParsingJobStatus`, the load-balancer ingress dedupe helpers).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use karmada_api::work::v1alpha2::AggregatedStatusItem;
use serde_json::{Map, Value, json};

use super::{InterpreterError, NativeKind, get, int_at, set_or_remove, str_at};

/// The template's new `.status` computed from the members' statuses (Karmada `AggregateStatus`),
/// or `None` when the kind has no aggregation rule or the status is already up to date. `now`
/// stamps the conditions a Job gains.
pub fn aggregate_status(
    template: &Value,
    items: &[AggregatedStatusItem],
    now: Timestamp,
) -> Result<Option<Value>, InterpreterError> {
    let Some(kind) = NativeKind::of_object(template) else {
        return Ok(None);
    };
    let old = match template.get("status") {
        Some(Value::Object(m)) => Value::Object(m.clone()),
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(_) => {
            return Err(InterpreterError::malformed(
                template,
                ".status is not an object",
            ));
        }
    };
    let ctx = Ctx { template, items };
    let new = match kind {
        NativeKind::Deployment => ctx.workload(
            &old,
            &[
                ("replicas", true),
                ("readyReplicas", true),
                ("updatedReplicas", true),
                ("availableReplicas", true),
                ("unavailableReplicas", true),
            ],
            GenerationRule::Template,
        )?,
        NativeKind::ReplicaSet => ctx.workload(
            &old,
            &[
                ("replicas", true),
                ("readyReplicas", true),
                ("availableReplicas", true),
            ],
            GenerationRule::Template,
        )?,
        NativeKind::StatefulSet => ctx.workload(
            &old,
            &[
                ("availableReplicas", false),
                ("currentReplicas", true),
                ("readyReplicas", true),
                ("replicas", false),
                ("updatedReplicas", true),
            ],
            GenerationRule::Member,
        )?,
        NativeKind::DaemonSet => ctx.workload(
            &old,
            &[
                ("currentNumberScheduled", false),
                ("desiredNumberScheduled", false),
                ("numberAvailable", true),
                ("numberMisscheduled", false),
                ("numberReady", false),
                ("updatedNumberScheduled", true),
                ("numberUnavailable", true),
            ],
            GenerationRule::Template,
        )?,
        NativeKind::Service => {
            if str_at(template, &["spec", "type"]) != "LoadBalancer" {
                return Ok(None);
            }
            load_balancer_status(ctx.ingresses()?, true)
        }
        NativeKind::Ingress => load_balancer_status(ctx.ingresses()?, false),
        NativeKind::Job => {
            if job_finished(&old).is_some() {
                // A finished Job's status is final.
                return Ok(None);
            }
            ctx.job(&old, now)?
        }
        NativeKind::CronJob => ctx.cron_job()?,
        NativeKind::Pod => {
            if items.is_empty() {
                return Ok(None);
            }
            ctx.pod()?
        }
        NativeKind::PersistentVolume => ctx.persistent_volume()?,
        NativeKind::PersistentVolumeClaim => ctx.persistent_volume_claim()?,
        NativeKind::PodDisruptionBudget => ctx.pod_disruption_budget()?,
        NativeKind::HorizontalPodAutoscaler => ctx.horizontal_pod_autoscaler()?,
        NativeKind::ServiceAccount | NativeKind::Secret | NativeKind::ServiceImport => {
            return Ok(None);
        }
    };
    Ok((new != old).then_some(new))
}

/// Which generation a member's template generation is compared against before the template's
/// observedGeneration may advance.
#[derive(Clone, Copy, PartialEq, Eq)]
enum GenerationRule {
    /// `resourceTemplateGeneration >= template.generation` (Deployment, ReplicaSet, DaemonSet).
    Template,
    /// `resourceTemplateGeneration >= member.generation`, as upstream compares for StatefulSets.
    Member,
}

struct Ctx<'a> {
    template: &'a Value,
    items: &'a [AggregatedStatusItem],
}

impl Ctx<'_> {
    /// The reported member statuses, skipping members that have not reported.
    fn statuses(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.items
            .iter()
            .filter_map(|i| i.status.as_ref().map(|s| (i.cluster_name.as_str(), s)))
    }

    fn malformed(&self, cluster: &str, what: &str) -> InterpreterError {
        InterpreterError::malformed(
            self.template,
            format!("status from cluster {cluster}: {what}"),
        )
    }

    /// An integer field of a member status; absent is 0.
    fn member_int(
        &self,
        cluster: &str,
        status: &Value,
        key: &str,
    ) -> Result<i64, InterpreterError> {
        match status.get(key) {
            None | Some(Value::Null) => Ok(0),
            Some(v) => v
                .as_i64()
                .ok_or_else(|| self.malformed(cluster, &format!("{key} is not an integer"))),
        }
    }

    /// Sums counters of workload statuses and advances observedGeneration only when every member
    /// has caught up with the template (`aggregateDeploymentStatus` and friends). Each counter is
    /// `(field, omitempty)`.
    fn workload(
        &self,
        old: &Value,
        counters: &[(&str, bool)],
        rule: GenerationRule,
    ) -> Result<Value, InterpreterError> {
        let generation = int_at(self.template, &["metadata", "generation"]);
        let mut sums = vec![0i64; counters.len()];
        let mut caught_up = 0usize;
        for (cluster, status) in self.statuses() {
            let observed = self.member_int(cluster, status, "observedGeneration")?;
            let member_generation = self.member_int(cluster, status, "generation")?;
            let template_generation =
                self.member_int(cluster, status, "resourceTemplateGeneration")?;
            let reference = match rule {
                GenerationRule::Template => generation,
                GenerationRule::Member => member_generation,
            };
            if observed >= member_generation && template_generation >= reference {
                caught_up += 1;
            }
            for (sum, (key, _)) in sums.iter_mut().zip(counters) {
                *sum += self.member_int(cluster, status, key)?;
            }
        }
        let mut new = old.clone();
        let observed_generation = if caught_up == self.items.len() {
            generation
        } else {
            int_at(old, &["observedGeneration"])
        };
        set_or_remove(
            &mut new,
            &["observedGeneration"],
            Value::from(observed_generation),
        );
        for (sum, (key, omitempty)) in sums.into_iter().zip(counters) {
            if *omitempty {
                set_or_remove(&mut new, &[key], Value::from(sum));
            } else {
                super::set(&mut new, &[key], Value::from(sum));
            }
        }
        Ok(new)
    }

    /// All load-balancer ingress entries of the members.
    fn ingresses(&self) -> Result<Vec<Value>, InterpreterError> {
        let mut all = Vec::new();
        for (cluster, status) in self.statuses() {
            match get(status, &["loadBalancer", "ingress"]) {
                None | Some(Value::Null) => {}
                Some(Value::Array(list)) => all.extend(list.iter().cloned()),
                Some(_) => {
                    return Err(self.malformed(cluster, "loadBalancer.ingress is not a list"));
                }
            }
        }
        Ok(all)
    }

    fn job(&self, old: &Value, now: Timestamp) -> Result<Value, InterpreterError> {
        let (mut active, mut succeeded, mut failed) = (0i64, 0i64, 0i64);
        let mut failed_clusters = Vec::new();
        let (mut successful, mut started, mut completed, mut criteria_met) =
            (0usize, 0usize, 0usize, 0usize);
        let mut start_time: Option<(Timestamp, Value)> = None;
        let mut completion_time: Option<(Timestamp, Value)> = None;
        for (cluster, status) in self.statuses() {
            active += self.member_int(cluster, status, "active")?;
            succeeded += self.member_int(cluster, status, "succeeded")?;
            failed += self.member_int(cluster, status, "failed")?;
            match job_finished(status) {
                Some("Complete") => successful += 1,
                Some("Failed") => failed_clusters.push(cluster.to_string()),
                _ => {}
            }
            let conditions = status.get("conditions").and_then(Value::as_array);
            if conditions.into_iter().flatten().any(|c| {
                str_at(c, &["type"]) == "SuccessCriteriaMet" && str_at(c, &["status"]) == "True"
            }) {
                criteria_met += 1;
            }
            if let Some(t) = self.time(cluster, status, "startTime")? {
                started += 1;
                if start_time.as_ref().is_none_or(|(s, _)| t.0 < *s) {
                    start_time = Some(t);
                }
            }
            if let Some(t) = self.time(cluster, status, "completionTime")? {
                completed += 1;
                if completion_time.as_ref().is_none_or(|(c, _)| *c < t.0) {
                    completion_time = Some(t);
                }
            }
        }
        let stamp = Value::from(
            Timestamp::from_second(now.as_second())
                .unwrap_or(now)
                .to_string(),
        );
        let condition = |type_: &str, reason: &str, message: String| {
            json!({
                "type": type_,
                "status": "True",
                "lastProbeTime": stamp,
                "lastTransitionTime": stamp,
                "reason": reason,
                "message": message,
            })
        };
        let mut conditions = Vec::new();
        if !failed_clusters.is_empty() {
            conditions.push(condition(
                "Failed",
                "JobFailed",
                format!(
                    "Job executed failed in member clusters {}",
                    failed_clusters.join(",")
                ),
            ));
        }
        let total = self.items.len();
        if successful == total && successful > 0 {
            conditions.push(condition("Complete", "Completed", "Job completed".into()));
            if criteria_met == total {
                conditions.push(condition(
                    "SuccessCriteriaMet",
                    "CompletionsReached",
                    "All member clusters have met success criteria".into(),
                ));
            }
        }
        let mut new = Value::Object(Map::new());
        set_or_remove(&mut new, &["conditions"], Value::Array(conditions));
        let old_start = old.get("startTime").filter(|v| !v.is_null()).cloned();
        let start = match old_start {
            Some(v) => Some(v),
            None if started == total && started > 0 => start_time.map(|(_, v)| v),
            None => None,
        };
        if let Some(v) = start {
            new["startTime"] = v;
        }
        if completed == total
            && let Some((_, v)) = completion_time
        {
            new["completionTime"] = v;
        }
        set_or_remove(&mut new, &["active"], Value::from(active));
        set_or_remove(&mut new, &["succeeded"], Value::from(succeeded));
        set_or_remove(&mut new, &["failed"], Value::from(failed));
        Ok(new)
    }

    /// A timestamp field of a member status, with its original text.
    fn time(
        &self,
        cluster: &str,
        status: &Value,
        key: &str,
    ) -> Result<Option<(Timestamp, Value)>, InterpreterError> {
        match status.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                let t = v
                    .as_str()
                    .and_then(|s| s.parse::<Timestamp>().ok())
                    .ok_or_else(|| self.malformed(cluster, &format!("{key} is not a time")))?;
                Ok(Some((t, v.clone())))
            }
        }
    }

    fn cron_job(&self) -> Result<Value, InterpreterError> {
        let mut active = Vec::new();
        let mut last_schedule: Option<(Timestamp, Value)> = None;
        let mut last_successful: Option<(Timestamp, Value)> = None;
        for (cluster, status) in self.statuses() {
            match status.get("active") {
                None | Some(Value::Null) => {}
                Some(Value::Array(list)) => active.extend(list.iter().cloned()),
                Some(_) => return Err(self.malformed(cluster, "active is not a list")),
            }
            for (key, latest) in [
                ("lastScheduleTime", &mut last_schedule),
                ("lastSuccessfulTime", &mut last_successful),
            ] {
                if let Some(t) = self.time(cluster, status, key)?
                    && latest.as_ref().is_none_or(|(l, _)| *l < t.0)
                {
                    *latest = Some(t);
                }
            }
        }
        let mut new = Value::Object(Map::new());
        set_or_remove(&mut new, &["active"], Value::Array(active));
        if let Some((_, v)) = last_schedule {
            new["lastScheduleTime"] = v;
        }
        if let Some((_, v)) = last_successful {
            new["lastSuccessfulTime"] = v;
        }
        Ok(new)
    }

    fn pod(&self) -> Result<Value, InterpreterError> {
        let mut phases: Vec<String> = Vec::new();
        let mut containers = Vec::new();
        let mut init_containers = Vec::new();
        for item in self.items {
            let Some(status) = &item.status else {
                // Not collected yet: count it as pending so it holds the aggregate back.
                phases.push("Pending".into());
                continue;
            };
            phases.push(str_at(status, &["phase"]).to_string());
            for (field, out) in [
                ("containerStatuses", &mut containers),
                ("initContainerStatuses", &mut init_containers),
            ] {
                for cs in status
                    .get(field)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    // Only readiness and state are kept, in the shape of a typed ContainerStatus.
                    out.push(json!({
                        "name": "",
                        "state": cs.get("state").filter(|v| v.is_object()).cloned().unwrap_or_else(|| json!({})),
                        "lastState": {},
                        "ready": cs.get("ready").and_then(Value::as_bool).unwrap_or(false),
                        "restartCount": 0,
                        "image": "",
                        "imageID": "",
                    }));
                }
            }
        }
        let phase = ["Failed", "Pending", "Running", "Succeeded"]
            .into_iter()
            .find(|p| phases.iter().any(|x| x == p))
            .unwrap_or("");
        let mut new = Value::Object(Map::new());
        set_or_remove(&mut new, &["phase"], Value::from(phase));
        set_or_remove(&mut new, &["containerStatuses"], Value::Array(containers));
        set_or_remove(
            &mut new,
            &["initContainerStatuses"],
            Value::Array(init_containers),
        );
        Ok(new)
    }

    fn persistent_volume(&self) -> Result<Value, InterpreterError> {
        let phases: Vec<&str> = self
            .items
            .iter()
            .map(|i| match &i.status {
                None => "Pending",
                Some(s) => str_at(s, &["phase"]),
            })
            .collect();
        let phase = ["Failed", "Pending", "Available", "Bound", "Released"]
            .into_iter()
            .find(|p| phases.contains(p))
            .unwrap_or("");
        let mut new = Value::Object(Map::new());
        set_or_remove(&mut new, &["phase"], Value::from(phase));
        Ok(new)
    }

    fn persistent_volume_claim(&self) -> Result<Value, InterpreterError> {
        let mut phase = "Bound";
        for (_, status) in self.statuses() {
            let member = str_at(status, &["phase"]);
            if member == "Lost" {
                phase = "Lost";
                break;
            }
            if member != "Bound" {
                phase = member;
            }
        }
        let mut new = Value::Object(Map::new());
        set_or_remove(&mut new, &["phase"], Value::from(phase));
        Ok(new)
    }

    fn pod_disruption_budget(&self) -> Result<Value, InterpreterError> {
        let keys = [
            "currentHealthy",
            "desiredHealthy",
            "expectedPods",
            "disruptionsAllowed",
        ];
        let mut sums = [0i64; 4];
        let mut disrupted = Map::new();
        for (cluster, status) in self.statuses() {
            for (sum, key) in sums.iter_mut().zip(keys) {
                *sum += self.member_int(cluster, status, key)?;
            }
            for (pod, time) in status
                .get("disruptedPods")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                disrupted.insert(format!("{cluster}/{pod}"), time.clone());
            }
        }
        let mut new = Value::Object(Map::new());
        for (sum, key) in sums.into_iter().zip(keys) {
            new[key] = Value::from(sum);
        }
        set_or_remove(&mut new, &["disruptedPods"], Value::Object(disrupted));
        Ok(new)
    }

    fn horizontal_pod_autoscaler(&self) -> Result<Value, InterpreterError> {
        let (mut current, mut desired) = (0i64, 0i64);
        for (cluster, status) in self.statuses() {
            current += self.member_int(cluster, status, "currentReplicas")?;
            desired += self.member_int(cluster, status, "desiredReplicas")?;
        }
        let mut new = json!({ "desiredReplicas": desired });
        set_or_remove(&mut new, &["currentReplicas"], Value::from(current));
        Ok(new)
    }
}

/// The type of a True Complete or Failed condition, if the Job finished (`GetJobFinishedStatus`).
fn job_finished(status: &Value) -> Option<&str> {
    status
        .get("conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| {
            matches!(str_at(c, &["type"]), "Complete" | "Failed")
                && str_at(c, &["status"]) == "True"
        })
        .map(|c| str_at(c, &["type"]))
}

/// Orders port statuses by port, protocol, then error (none first) (`sortServicePortStatus`).
fn compare_ports(a: &Value, b: &Value) -> Ordering {
    int_at(a, &["port"])
        .cmp(&int_at(b, &["port"]))
        .then_with(|| str_at(a, &["protocol"]).cmp(str_at(b, &["protocol"])))
        .then_with(|| {
            match (
                a.get("error").and_then(Value::as_str),
                b.get("error").and_then(Value::as_str),
            ) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Less,
                (Some(_), None) => Ordering::Greater,
                (Some(x), Some(y)) => x.cmp(y),
            }
        })
}

/// Orders ingress entries: named hosts first by name, then by IP, then by IP mode (set first).
fn compare_ingresses(a: &Value, b: &Value, with_ip_mode: bool) -> Ordering {
    let (ha, hb) = (str_at(a, &["hostname"]), str_at(b, &["hostname"]));
    let by_host = match (ha.is_empty(), hb.is_empty()) {
        (false, true) => Ordering::Less,
        (true, false) => Ordering::Greater,
        _ => ha.cmp(hb),
    };
    by_host
        .then_with(|| str_at(a, &["ip"]).cmp(str_at(b, &["ip"])))
        .then_with(|| {
            if !with_ip_mode {
                return Ordering::Equal;
            }
            match (
                a.get("ipMode").and_then(Value::as_str),
                b.get("ipMode").and_then(Value::as_str),
            ) {
                (Some(x), Some(y)) => x.cmp(y),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            }
        })
}

/// Merges entries for the same host, IP (and IP mode for Services), uniting their ports, and
/// sorts the result (`DedupeAndSortServiceLoadBalancerIngress` / `...IngressLoadBalancerIngress`);
/// returns `{"loadBalancer": {"ingress": [...]}}`.
fn load_balancer_status(ingresses: Vec<Value>, with_ip_mode: bool) -> Value {
    // (hostname, ip, ipMode) → (last entry seen, united ports)
    type Key = (String, String, Option<String>);
    let mut merged: BTreeMap<Key, (Value, Vec<Value>)> = BTreeMap::new();
    for ingress in ingresses {
        let key = (
            str_at(&ingress, &["hostname"]).to_string(),
            str_at(&ingress, &["ip"]).to_string(),
            if with_ip_mode {
                ingress
                    .get("ipMode")
                    .and_then(Value::as_str)
                    .map(String::from)
            } else {
                None
            },
        );
        let ports: Vec<Value> = ingress
            .get("ports")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let entry = merged
            .entry(key)
            .or_insert_with(|| (Value::Null, Vec::new()));
        entry.0 = ingress;
        for p in ports {
            if !entry.1.contains(&p) {
                entry.1.push(p);
            }
        }
    }
    let mut out: Vec<Value> = merged
        .into_values()
        .map(|(mut ingress, mut ports)| {
            ports.sort_by(compare_ports);
            if let Value::Object(m) = &mut ingress {
                if ports.is_empty() {
                    m.remove("ports");
                } else {
                    m.insert("ports".into(), Value::Array(ports));
                }
            }
            ingress
        })
        .collect();
    out.sort_by(|a, b| compare_ingresses(a, b, with_ip_mode));
    let mut lb = Map::new();
    if !out.is_empty() {
        lb.insert("ingress".into(), Value::Array(out));
    }
    json!({ "loadBalancer": lb })
}
