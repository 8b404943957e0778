//! autoscaling/v1 HorizontalPodAutoscalers, stored as autoscaling/v2 ones and converted as
//! pkg/apis/autoscaling/v1/conversion.go does: v1 has only a CPU utilization target, so every
//! other metric, the current metrics, the behavior and the conditions ride in
//! `autoscaling.alpha.kubernetes.io/*` annotations of the v1 view (metrics and metric statuses
//! in v1's own MetricSpec/MetricStatus shapes), and come back when a v1 client writes the
//! object again.

use serde_json::{Map, Value, json};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|v| !v.is_null())
}

fn obj(pairs: Vec<(&str, Option<Value>)>) -> Value {
    Value::Object(
        pairs
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
            .collect(),
    )
}

/// A non-pointer Go quantity: its zero value marshals as "0".
fn quantity(v: Option<&Value>) -> Value {
    v.cloned().unwrap_or_else(|| json!("0"))
}

fn is_cpu_utilization(m: &Value) -> bool {
    m.get("type").and_then(Value::as_str) == Some("Resource")
        && field(m, "resource").is_some_and(|r| {
            r.get("name").and_then(Value::as_str) == Some("cpu")
                && field(r, "target").is_some_and(|t| field(t, "averageUtilization").is_some())
        })
}

/// autoscaling/v2 MetricSpec → autoscaling/v1 MetricSpec.
fn metric_spec_to_v1(m: &Value) -> Value {
    let t = |s: &Value| field(s, "target").cloned().unwrap_or(json!({}));
    let metric = |s: &Value| field(s, "metric").cloned().unwrap_or(json!({}));
    let mut out = Map::new();
    out.insert("type".into(), m.get("type").cloned().unwrap_or(json!("")));
    if let Some(s) = field(m, "object") {
        let (mt, tg) = (metric(s), t(s));
        out.insert(
            "object".into(),
            obj(vec![
                ("target", field(s, "describedObject").cloned()),
                ("metricName", mt.get("name").cloned()),
                ("targetValue", Some(quantity(field(&tg, "value")))),
                ("selector", field(&mt, "selector").cloned()),
                ("averageValue", field(&tg, "averageValue").cloned()),
            ]),
        );
    }
    if let Some(s) = field(m, "pods") {
        let (mt, tg) = (metric(s), t(s));
        out.insert(
            "pods".into(),
            obj(vec![
                ("metricName", mt.get("name").cloned()),
                (
                    "targetAverageValue",
                    Some(quantity(field(&tg, "averageValue"))),
                ),
                ("selector", field(&mt, "selector").cloned()),
            ]),
        );
    }
    for key in ["resource", "containerResource"] {
        if let Some(s) = field(m, key) {
            let tg = t(s);
            out.insert(
                key.into(),
                obj(vec![
                    ("name", s.get("name").cloned()),
                    (
                        "targetAverageUtilization",
                        field(&tg, "averageUtilization").cloned(),
                    ),
                    ("targetAverageValue", field(&tg, "averageValue").cloned()),
                    ("container", s.get("container").cloned()),
                ]),
            );
        }
    }
    if let Some(s) = field(m, "external") {
        let (mt, tg) = (metric(s), t(s));
        out.insert(
            "external".into(),
            obj(vec![
                ("metricName", mt.get("name").cloned()),
                ("metricSelector", field(&mt, "selector").cloned()),
                ("targetValue", field(&tg, "value").cloned()),
                ("targetAverageValue", field(&tg, "averageValue").cloned()),
            ]),
        );
    }
    Value::Object(out)
}

/// autoscaling/v1 MetricSpec → autoscaling/v2 MetricSpec.
fn metric_spec_to_v2(m: &Value) -> Value {
    let metric = |name: Option<&Value>, selector: Option<&Value>| {
        obj(vec![
            ("name", name.cloned()),
            ("selector", selector.cloned()),
        ])
    };
    let mut out = Map::new();
    out.insert("type".into(), m.get("type").cloned().unwrap_or(json!("")));
    if let Some(s) = field(m, "object") {
        let ty = if field(s, "averageValue").is_some() {
            "AverageValue"
        } else {
            "Value"
        };
        out.insert(
            "object".into(),
            obj(vec![
                ("describedObject", field(s, "target").cloned()),
                (
                    "metric",
                    Some(metric(field(s, "metricName"), field(s, "selector"))),
                ),
                (
                    "target",
                    Some(obj(vec![
                        ("type", Some(json!(ty))),
                        ("value", Some(quantity(field(s, "targetValue")))),
                        ("averageValue", field(s, "averageValue").cloned()),
                    ])),
                ),
            ]),
        );
    }
    if let Some(s) = field(m, "pods") {
        out.insert(
            "pods".into(),
            obj(vec![
                (
                    "metric",
                    Some(metric(field(s, "metricName"), field(s, "selector"))),
                ),
                (
                    "target",
                    Some(obj(vec![
                        ("type", Some(json!("AverageValue"))),
                        (
                            "averageValue",
                            Some(quantity(field(s, "targetAverageValue"))),
                        ),
                    ])),
                ),
            ]),
        );
    }
    for key in ["resource", "containerResource"] {
        if let Some(s) = field(m, key) {
            let utilization = field(s, "targetAverageUtilization");
            let ty = if utilization.is_some() {
                "Utilization"
            } else {
                "AverageValue"
            };
            out.insert(
                key.into(),
                obj(vec![
                    ("name", s.get("name").cloned()),
                    ("container", s.get("container").cloned()),
                    (
                        "target",
                        Some(obj(vec![
                            ("type", Some(json!(ty))),
                            ("averageUtilization", utilization.cloned()),
                            ("averageValue", field(s, "targetAverageValue").cloned()),
                        ])),
                    ),
                ]),
            );
        }
    }
    if let Some(s) = field(m, "external") {
        let ty = if field(s, "targetAverageValue").is_some() {
            "AverageValue"
        } else {
            "Value"
        };
        out.insert(
            "external".into(),
            obj(vec![
                (
                    "metric",
                    Some(metric(field(s, "metricName"), field(s, "metricSelector"))),
                ),
                (
                    "target",
                    Some(obj(vec![
                        ("type", Some(json!(ty))),
                        ("value", field(s, "targetValue").cloned()),
                        ("averageValue", field(s, "targetAverageValue").cloned()),
                    ])),
                ),
            ]),
        );
    }
    Value::Object(out)
}

/// autoscaling/v2 MetricStatus → autoscaling/v1 MetricStatus.
fn metric_status_to_v1(m: &Value) -> Value {
    let cur = |s: &Value| field(s, "current").cloned().unwrap_or(json!({}));
    let metric = |s: &Value| field(s, "metric").cloned().unwrap_or(json!({}));
    let mut out = Map::new();
    out.insert("type".into(), m.get("type").cloned().unwrap_or(json!("")));
    if let Some(s) = field(m, "object") {
        let (mt, c) = (metric(s), cur(s));
        out.insert(
            "object".into(),
            obj(vec![
                ("target", field(s, "describedObject").cloned()),
                ("metricName", mt.get("name").cloned()),
                ("currentValue", Some(quantity(field(&c, "value")))),
                ("selector", field(&mt, "selector").cloned()),
                ("averageValue", field(&c, "averageValue").cloned()),
            ]),
        );
    }
    if let Some(s) = field(m, "pods") {
        let (mt, c) = (metric(s), cur(s));
        out.insert(
            "pods".into(),
            obj(vec![
                ("metricName", mt.get("name").cloned()),
                (
                    "currentAverageValue",
                    Some(quantity(field(&c, "averageValue"))),
                ),
                ("selector", field(&mt, "selector").cloned()),
            ]),
        );
    }
    for key in ["resource", "containerResource"] {
        if let Some(s) = field(m, key) {
            let c = cur(s);
            out.insert(
                key.into(),
                obj(vec![
                    ("name", s.get("name").cloned()),
                    (
                        "currentAverageUtilization",
                        field(&c, "averageUtilization").cloned(),
                    ),
                    (
                        "currentAverageValue",
                        Some(quantity(field(&c, "averageValue"))),
                    ),
                    ("container", s.get("container").cloned()),
                ]),
            );
        }
    }
    if let Some(s) = field(m, "external") {
        let (mt, c) = (metric(s), cur(s));
        out.insert(
            "external".into(),
            obj(vec![
                ("metricName", mt.get("name").cloned()),
                ("metricSelector", field(&mt, "selector").cloned()),
                ("currentValue", Some(quantity(field(&c, "value")))),
                ("currentAverageValue", field(&c, "averageValue").cloned()),
            ]),
        );
    }
    Value::Object(out)
}

/// autoscaling/v1 MetricStatus → autoscaling/v2 MetricStatus.
fn metric_status_to_v2(m: &Value) -> Value {
    let metric = |name: Option<&Value>, selector: Option<&Value>| {
        obj(vec![
            ("name", name.cloned()),
            ("selector", selector.cloned()),
        ])
    };
    let mut out = Map::new();
    out.insert("type".into(), m.get("type").cloned().unwrap_or(json!("")));
    if let Some(s) = field(m, "object") {
        out.insert(
            "object".into(),
            obj(vec![
                (
                    "metric",
                    Some(metric(field(s, "metricName"), field(s, "selector"))),
                ),
                (
                    "current",
                    Some(obj(vec![
                        ("value", Some(quantity(field(s, "currentValue")))),
                        ("averageValue", field(s, "averageValue").cloned()),
                    ])),
                ),
                ("describedObject", field(s, "target").cloned()),
            ]),
        );
    }
    if let Some(s) = field(m, "pods") {
        out.insert(
            "pods".into(),
            obj(vec![
                (
                    "metric",
                    Some(metric(field(s, "metricName"), field(s, "selector"))),
                ),
                (
                    "current",
                    Some(obj(vec![(
                        "averageValue",
                        Some(quantity(field(s, "currentAverageValue"))),
                    )])),
                ),
            ]),
        );
    }
    for key in ["resource", "containerResource"] {
        if let Some(s) = field(m, key) {
            out.insert(
                key.into(),
                obj(vec![
                    ("name", s.get("name").cloned()),
                    ("container", s.get("container").cloned()),
                    (
                        "current",
                        Some(obj(vec![
                            (
                                "averageUtilization",
                                field(s, "currentAverageUtilization").cloned(),
                            ),
                            (
                                "averageValue",
                                Some(quantity(field(s, "currentAverageValue"))),
                            ),
                        ])),
                    ),
                ]),
            );
        }
    }
    if let Some(s) = field(m, "external") {
        out.insert(
            "external".into(),
            obj(vec![
                (
                    "metric",
                    Some(metric(field(s, "metricName"), field(s, "metricSelector"))),
                ),
                (
                    "current",
                    Some(obj(vec![
                        ("value", Some(quantity(field(s, "currentValue")))),
                        ("averageValue", field(s, "currentAverageValue").cloned()),
                    ])),
                ),
            ]),
        );
    }
    Value::Object(out)
}

fn list(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// A stored (autoscaling/v2) HPA as autoscaling/v1 serves it.
pub(crate) fn to_v1(stored: &Value) -> Value {
    let empty = json!({});
    let spec = field(stored, "spec").unwrap_or(&empty);
    let status = field(stored, "status").unwrap_or(&empty);
    let metrics = list(field(spec, "metrics"));
    let mut meta = field(stored, "metadata").cloned().unwrap_or(json!({}));
    let mut annotations: Vec<(&str, String)> = Vec::new();
    let others: Vec<Value> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization(m))
        .map(metric_spec_to_v1)
        .collect();
    if !others.is_empty() {
        annotations.push((METRICS, Value::from(others).to_string()));
    }
    let current = list(field(status, "currentMetrics"));
    if !current.is_empty() {
        let v1: Vec<Value> = current.iter().map(metric_status_to_v1).collect();
        annotations.push((CURRENT_METRICS, Value::from(v1).to_string()));
    }
    if let Some(b) = field(spec, "behavior") {
        annotations.push((BEHAVIOR, b.to_string()));
    }
    let conditions = list(field(status, "conditions"));
    if !conditions.is_empty() {
        annotations.push((CONDITIONS, Value::from(conditions.to_vec()).to_string()));
    }
    if !annotations.is_empty()
        && let Some(m) = meta.as_object_mut()
    {
        let a = m.entry("annotations").or_insert_with(|| json!({}));
        if !a.is_object() {
            *a = json!({});
        }
        if let Some(a) = a.as_object_mut() {
            for (k, v) in annotations {
                a.insert(k.into(), Value::String(v));
            }
        }
    }
    let target_cpu = metrics
        .iter()
        .find(|m| is_cpu_utilization(m))
        .and_then(|m| m.pointer("/resource/target/averageUtilization").cloned());
    let current_cpu = current
        .iter()
        .filter(|m| {
            m.get("type").and_then(Value::as_str) == Some("Resource")
                && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        })
        .find_map(|m| m.pointer("/resource/current/averageUtilization").cloned());
    obj(vec![
        ("kind", Some(json!("HorizontalPodAutoscaler"))),
        ("apiVersion", Some(json!("autoscaling/v1"))),
        ("metadata", Some(meta)),
        (
            "spec",
            Some(obj(vec![
                ("scaleTargetRef", spec.get("scaleTargetRef").cloned()),
                ("minReplicas", field(spec, "minReplicas").cloned()),
                (
                    "maxReplicas",
                    Some(spec.get("maxReplicas").cloned().unwrap_or(json!(0))),
                ),
                ("targetCPUUtilizationPercentage", target_cpu),
            ])),
        ),
        (
            "status",
            Some(obj(vec![
                (
                    "observedGeneration",
                    field(status, "observedGeneration").cloned(),
                ),
                ("lastScaleTime", field(status, "lastScaleTime").cloned()),
                (
                    "currentReplicas",
                    Some(status.get("currentReplicas").cloned().unwrap_or(json!(0))),
                ),
                (
                    "desiredReplicas",
                    Some(status.get("desiredReplicas").cloned().unwrap_or(json!(0))),
                ),
                ("currentCPUUtilizationPercentage", current_cpu),
            ])),
        ),
    ])
}

/// Takes an annotation out of the metadata, parsed; kube refuses an annotation it cannot parse.
fn take(meta: &mut Value, key: &str) -> Result<Option<Value>, String> {
    let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) else {
        return Ok(None);
    };
    let Some(raw) = a.remove(key) else {
        return Ok(None);
    };
    if a.is_empty()
        && let Some(m) = meta.as_object_mut()
    {
        m.remove("annotations");
    }
    let text = raw.as_str().unwrap_or_default();
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| format!("annotation {key}: {e}"))
}

/// An autoscaling/v1 HPA (defaulted as v1 defaults it) in its stored autoscaling/v2 form.
pub(crate) fn to_v2(v1: &Value) -> Result<Value, String> {
    let empty = json!({});
    let spec = field(v1, "spec").unwrap_or(&empty);
    let status = field(v1, "status").unwrap_or(&empty);
    let mut meta = field(v1, "metadata").cloned().unwrap_or(json!({}));
    let others = take(&mut meta, METRICS)?;
    let current = take(&mut meta, CURRENT_METRICS)?;
    let behavior = take(&mut meta, BEHAVIOR)?;
    let conditions = take(&mut meta, CONDITIONS)?;
    let mut metrics: Vec<Value> = list(others.as_ref())
        .iter()
        .map(metric_spec_to_v2)
        .collect();
    if let Some(cpu) = field(spec, "targetCPUUtilizationPercentage") {
        metrics.push(json!({
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu}},
        }));
    }
    let mut current_metrics: Vec<Value> = list(current.as_ref())
        .iter()
        .map(metric_status_to_v2)
        .collect();
    if current_metrics.is_empty()
        && let Some(cpu) = field(status, "currentCPUUtilizationPercentage")
    {
        current_metrics.push(json!({
            "type": "Resource",
            "resource": {"name": "cpu", "current": {"averageUtilization": cpu}},
        }));
    }
    // v1 defaulting: one replica at least.
    let min = field(spec, "minReplicas").cloned().unwrap_or(json!(1));
    Ok(obj(vec![
        ("kind", Some(json!("HorizontalPodAutoscaler"))),
        ("apiVersion", Some(json!("autoscaling/v2"))),
        ("metadata", Some(meta)),
        (
            "spec",
            Some(obj(vec![
                ("scaleTargetRef", spec.get("scaleTargetRef").cloned()),
                ("minReplicas", Some(min)),
                (
                    "maxReplicas",
                    Some(spec.get("maxReplicas").cloned().unwrap_or(json!(0))),
                ),
                (
                    "metrics",
                    (!metrics.is_empty()).then(|| Value::from(metrics)),
                ),
                ("behavior", behavior),
            ])),
        ),
        (
            "status",
            Some(obj(vec![
                (
                    "observedGeneration",
                    field(status, "observedGeneration").cloned(),
                ),
                ("lastScaleTime", field(status, "lastScaleTime").cloned()),
                ("currentReplicas", field(status, "currentReplicas").cloned()),
                (
                    "desiredReplicas",
                    Some(status.get("desiredReplicas").cloned().unwrap_or(json!(0))),
                ),
                (
                    "currentMetrics",
                    (!current_metrics.is_empty()).then(|| Value::from(current_metrics)),
                ),
                ("conditions", conditions),
            ])),
        ),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_target_is_v1s_own_field_and_everything_else_rides_in_annotations() {
        let v2 = json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 10,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
                    {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "100"}}},
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}},
            },
            "status": {
                "currentReplicas": 3, "desiredReplicas": 4,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 85, "averageValue": "850m"}}}],
                "conditions": [{"type": "AbleToScale", "status": "True"}],
            },
        });
        let v1 = to_v1(&v2);
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 85);
        let ann = &v1["metadata"]["annotations"];
        let others: Value = serde_json::from_str(ann[METRICS].as_str().unwrap()).unwrap();
        assert_eq!(
            others,
            json!([{"type": "Pods", "pods": {"metricName": "rps", "targetAverageValue": "100"}}])
        );
        assert!(ann[BEHAVIOR].is_string() && ann[CONDITIONS].is_string());
        // A v1 client writing it back loses nothing.
        let back = to_v2(&v1).unwrap();
        assert_eq!(back["spec"]["metrics"][1], v2["spec"]["metrics"][0]);
        assert_eq!(
            back["spec"]["metrics"][0],
            json!({"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "100"}}})
        );
        assert_eq!(back["spec"]["behavior"], v2["spec"]["behavior"]);
        assert_eq!(back["status"]["conditions"], v2["status"]["conditions"]);
        assert_eq!(
            back["status"]["currentMetrics"],
            v2["status"]["currentMetrics"]
        );
        assert!(back["metadata"].get("annotations").is_none(), "{back}");
    }

    #[test]
    fn a_v1_object_without_target_stays_without_metrics() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "w"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "w"}, "maxReplicas": 3}});
        let v2 = to_v2(&v1).unwrap();
        assert_eq!(v2["spec"]["minReplicas"], 1);
        assert!(v2["spec"].get("metrics").is_none());
        let bad = json!({"metadata": {"annotations": {METRICS: "not json"}}, "spec": {}});
        assert!(
            to_v2(&bad)
                .unwrap_err()
                .starts_with("annotation autoscaling.alpha.kubernetes.io/metrics")
        );
    }
}
