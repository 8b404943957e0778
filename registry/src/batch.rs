//! batch/v1 validation (pkg/apis/batch/validation) and the cron schedule parser kube uses
//! (github.com/robfig/cron/v3 ParseStandard), with its error texts.

use std::collections::BTreeMap;

use serde_json::Value;

use super::apps::nonnegative;
use super::field::{self, Bad, Path};
use super::json;
use super::meta;
use super::names;
use super::pod;
use apimachinery::status::Cause;

const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
const JOB_NAME: &str = "batch.kubernetes.io/job-name";
const LEGACY_CONTROLLER_UID: &str = "controller-uid";
const LEGACY_JOB_NAME: &str = "job-name";

/// The Job strategy's generateSelector: labels the template and selects on the uid, unless
/// `spec.manualSelector` is true.
pub(crate) fn generate_selector(obj: &mut Value) {
    if json::at(obj, &["spec", "manualSelector"]).and_then(Value::as_bool) == Some(true) {
        return;
    }
    let name = json::at(obj, &["metadata", "name"])
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let uid = json::at(obj, &["metadata", "uid"])
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(spec) = json::obj_mut(obj, "spec") else {
        return;
    };
    if let Some(labels) = json::obj_mut(spec, "template")
        .and_then(|t| json::obj_mut(t, "metadata"))
        .and_then(|m| json::obj_mut(m, "labels"))
        .and_then(Value::as_object_mut)
    {
        for key in [LEGACY_JOB_NAME, JOB_NAME] {
            labels
                .entry(key)
                .or_insert_with(|| Value::String(name.clone()));
        }
        for key in [LEGACY_CONTROLLER_UID, CONTROLLER_UID] {
            labels
                .entry(key)
                .or_insert_with(|| Value::String(uid.clone()));
        }
    }
    if let Some(ml) = json::obj_mut(spec, "selector")
        .and_then(|s| json::obj_mut(s, "matchLabels"))
        .and_then(Value::as_object_mut)
    {
        ml.entry(CONTROLLER_UID)
            .or_insert_with(|| Value::String(uid.clone()));
    }
}

/// ValidateHasLabel.
fn has_label(
    labels: Option<&BTreeMap<String, String>>,
    path: &Path,
    key: &str,
    want: &str,
) -> Option<Cause> {
    let p = path.child("labels").key(key);
    match labels.and_then(|l| l.get(key)) {
        None => Some(field::required(&p, &format!("must be '{want}'"))),
        Some(v) if v != want => Some(field::invalid(
            &p,
            Bad::Raw(field::go_string_map(labels)),
            &format!("must be '{want}'"),
        )),
        _ => None,
    }
}

/// validateGeneratedSelector.
fn validate_generated_selector(obj: &Value, prefixed: bool, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let spec = json::field(obj, "spec").unwrap_or(&empty);
    if json::boolean(spec, "manualSelector") == Some(true) {
        return;
    }
    let Some(sel) = json::field(spec, "selector") else {
        return;
    };
    let meta_v = json::field(obj, "metadata").unwrap_or(&empty);
    let uid = json::string(meta_v, "uid");
    let name = json::string(meta_v, "name");
    if uid.is_empty() {
        errs.push(field::required(&Path::new("metadata").child("uid"), ""));
    }
    let tpath = Path::new("spec").children(&["template", "metadata"]);
    let labels =
        json::at(spec, &["template", "metadata"]).and_then(|m| json::string_map(m, "labels"));
    errs.extend(has_label(
        labels.as_ref(),
        &tpath,
        LEGACY_CONTROLLER_UID,
        uid,
    ));
    errs.extend(has_label(labels.as_ref(), &tpath, LEGACY_JOB_NAME, name));
    let mut expected = BTreeMap::new();
    if prefixed {
        errs.extend(has_label(labels.as_ref(), &tpath, CONTROLLER_UID, uid));
        errs.extend(has_label(labels.as_ref(), &tpath, JOB_NAME, name));
        expected.insert(CONTROLLER_UID.to_string(), uid.to_string());
        expected.insert(JOB_NAME.to_string(), name.to_string());
    }
    expected.insert(LEGACY_CONTROLLER_UID.to_string(), uid.to_string());
    expected.insert(LEGACY_JOB_NAME.to_string(), name.to_string());
    if let Ok(s) = meta::selector_as_selector(Some(sel))
        && !s.matches(Some(&expected))
    {
        errs.push(field::invalid(
            &Path::new("spec").child("selector"),
            Bad::Raw(meta::go_label_selector(Some(sel))),
            "`selector` not auto-generated",
        ));
    }
}

/// validateJobSpec (shared by Jobs and CronJob job templates).
fn validate_job_spec(s: &Value, path: &Path, errs: &mut Vec<Cause>) {
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        nonnegative(s, key, path, errs);
    }
    if json::field(s, "maxFailedIndexes").is_some()
        && json::field(s, "backoffLimitPerIndex").is_none()
    {
        errs.push(field::required(
            &path.child("backoffLimitPerIndex"),
            "when maxFailedIndexes is specified",
        ));
    }
    if let Some(mb) = json::opt_str(s, "managedBy") {
        errs.extend(validate_domain_prefixed_path(mb, &path.child("managedBy")));
        if mb.len() > 63 {
            errs.push(field::too_long(&path.child("managedBy"), 63));
        }
    }
    if let Some(pfp) = json::field(s, "podFailurePolicy") {
        let rules = json::list(pfp, "rules").len();
        if rules > 20 {
            errs.push(field::too_many(
                &path.children(&["podFailurePolicy", "rules"]),
                rules,
                20,
            ));
        }
    }
    let mode = json::opt_str(s, "completionMode");
    if let Some(m) = mode {
        if !matches!(m, "NonIndexed" | "Indexed") {
            errs.push(field::not_supported(
                &path.child("completionMode"),
                Bad::str(m),
                &["NonIndexed", "Indexed"],
            ));
        }
        if m == "Indexed" {
            if json::field(s, "completions").is_none() {
                errs.push(field::required(
                    &path.child("completions"),
                    "when completion mode is Indexed",
                ));
            }
            if let Some(p) = json::int(s, "parallelism").filter(|p| *p > 100_000) {
                errs.push(field::invalid(
                    &path.child("parallelism"),
                    Bad::Int(p),
                    "must be less than or equal to 100000 when completion mode is Indexed",
                ));
            }
        }
    }
    if mode.is_none_or(|m| m == "NonIndexed") {
        for key in ["backoffLimitPerIndex", "maxFailedIndexes"] {
            if let Some(v) = json::int(s, key) {
                errs.push(field::invalid(
                    &path.child(key),
                    Bad::Int(v),
                    "requires indexed completion mode",
                ));
            }
        }
    }
    if let Some(p) = json::opt_str(s, "podReplacementPolicy") {
        if !matches!(p, "Failed" | "TerminatingOrFailed") {
            errs.push(field::not_supported(
                &path.child("podReplacementPolicy"),
                Bad::str(p),
                &["Failed", "TerminatingOrFailed"],
            ));
        } else if p == "TerminatingOrFailed" && json::field(s, "podFailurePolicy").is_some() {
            errs.push(field::not_supported(
                &path.child("podReplacementPolicy"),
                Bad::str(p),
                &["Failed"],
            ));
        }
    }
    let empty = Value::Null;
    let template = json::field(s, "template").unwrap_or(&empty);
    errs.extend(pod::validate_pod_template_spec(
        template,
        &path.child("template"),
    ));
    let restart = json::at(template, &["spec", "restartPolicy"])
        .and_then(Value::as_str)
        .unwrap_or("");
    let rp = path.children(&["template", "spec", "restartPolicy"]);
    if restart == "Always" || restart.is_empty() {
        errs.push(field::required(
            &rp,
            "valid values: \"OnFailure\", \"Never\"",
        ));
    } else if !matches!(restart, "OnFailure" | "Never") {
        errs.push(field::not_supported(
            &rp,
            Bad::str(restart),
            &["OnFailure", "Never"],
        ));
    } else if json::field(s, "podFailurePolicy").is_some() && restart != "Never" {
        errs.push(field::invalid(
            &rp,
            Bad::str(restart),
            "only \"Never\" is supported when podFailurePolicy is specified",
        ));
    }
}

/// IsDomainPrefixedPath.
fn validate_domain_prefixed_path(v: &str, path: &Path) -> Vec<Cause> {
    if v.is_empty() {
        return vec![field::required(path, "")];
    }
    let Some((host, rest)) = v
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        return vec![field::invalid(
            path,
            Bad::str(v),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errs: Vec<Cause> = names::dns1123_subdomain(host)
        .into_iter()
        .map(|m| field::invalid(path, Bad::str(host), &m))
        .collect();
    let ok = rest
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c));
    if !ok {
        errs.push(field::invalid(
            path,
            Bad::str(rest),
            &names::regex_error("Invalid path", "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+", &[]),
        ));
    }
    errs
}

/// ValidateJob (+ ValidateJobUpdate when `old` is set).
pub(crate) fn validate_job(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let s = json::field(obj, "spec").unwrap_or(&empty);
    let path = Path::new("spec");
    // RequirePrefixedLabels: always on create; on update only if the old Job had them.
    let prefixed = old.is_none_or(|o| {
        let labels = json::at(o, &["spec", "template", "metadata"])
            .and_then(|m| json::string_map(m, "labels"));
        labels.is_some_and(|l| l.contains_key(JOB_NAME) && l.contains_key(CONTROLLER_UID))
    });
    validate_generated_selector(obj, prefixed, errs);
    validate_job_spec(s, &path, errs);
    match json::field(s, "selector") {
        None => errs.push(field::required(&path.child("selector"), "")),
        Some(sel) => errs.extend(meta::validate_label_selector(
            Some(sel),
            &path.child("selector"),
        )),
    }
    if let Ok(sel) = meta::selector_as_selector(json::field(s, "selector")) {
        let labels =
            json::at(s, &["template", "metadata"]).and_then(|m| json::string_map(m, "labels"));
        if !sel.matches(labels.as_ref()) {
            errs.push(field::invalid(
                &path.children(&["template", "metadata", "labels"]),
                Bad::Raw(field::go_string_map(labels.as_ref())),
                "`selector` does not match template `labels`",
            ));
        }
    }
    let name = json::at(obj, &["metadata", "name"])
        .and_then(Value::as_str)
        .unwrap_or("");
    if json::string(s, "completionMode") == "Indexed"
        && let Some(c) = json::int(s, "completions").filter(|c| *c > 0)
    {
        let hostname = format!("{name}-{}", c - 1);
        if !names::dns1123_label(&hostname).is_empty() {
            errs.push(field::invalid(
                &Path::new("metadata").child("name"),
                Bad::str(name),
                &format!("will not able to create pod with invalid DNS label: {hostname}"),
            ));
        }
    }
    let Some(old) = old else {
        return;
    };
    let os = json::field(old, "spec").unwrap_or(&empty);
    let immutable = |key: &str, errs: &mut Vec<Cause>, render: &dyn Fn(Option<&Value>) -> Bad| {
        if !json::semantic_eq(json::field(s, key), json::field(os, key)) {
            errs.push(field::invalid(
                &path.child(key),
                render(json::field(s, key)),
                "field is immutable",
            ));
        }
    };
    // Elastic indexed jobs may scale completions in tandem with parallelism.
    let indexed = json::string(s, "completionMode") == "Indexed";
    if !indexed {
        immutable("completions", errs, &|v| {
            v.and_then(Value::as_i64)
                .map_or(Bad::Raw("null".into()), Bad::Int)
        });
    } else if !json::semantic_eq(
        json::field(s, "completions"),
        json::field(os, "completions"),
    ) && let Some(c) = json::int(s, "completions")
        && Some(c) != json::int(s, "parallelism")
    {
        errs.push(field::invalid(
            &path.child("completions"),
            Bad::Int(c),
            "can only be modified in tandem with spec.parallelism",
        ));
    }
    immutable("selector", errs, &|v| Bad::Raw(meta::go_label_selector(v)));
    // Scheduling directives of a suspended, never-started Job may change.
    let suspended = json::boolean(os, "suspend") == Some(true)
        && json::at(old, &["status", "startTime"]).is_none();
    let strip = |t: Option<&Value>| {
        let mut t = t.cloned().unwrap_or(Value::Null);
        if suspended {
            if let Some(m) = t.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("labels");
                m.remove("annotations");
            }
            if let Some(m) = t.get_mut("spec").and_then(Value::as_object_mut) {
                for k in ["nodeSelector", "tolerations", "schedulingGates"] {
                    m.remove(k);
                }
                if let Some(a) = m.get_mut("affinity").and_then(Value::as_object_mut) {
                    a.remove("nodeAffinity");
                }
            }
        }
        t
    };
    if !json::semantic_eq(
        Some(&strip(json::field(s, "template"))),
        Some(&strip(json::field(os, "template"))),
    ) {
        errs.push(field::invalid(
            &path.child("template"),
            Bad::Raw("core.PodTemplateSpec{...}".into()),
            "field is immutable",
        ));
    }
    for key in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        immutable(key, errs, &|v| match v {
            Some(Value::String(s)) => Bad::str(s),
            Some(Value::Number(n)) => n.as_i64().map_or(Bad::Omit, Bad::Int),
            None => Bad::Raw("null".into()),
            Some(_) => Bad::Omit,
        });
    }
}

/// validateCronJobSpec (+ the create-only 52-character name limit).
pub(crate) fn validate_cron_job(obj: &Value, old: Option<&Value>, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let s = json::field(obj, "spec").unwrap_or(&empty);
    let path = Path::new("spec");
    let schedule = json::string(s, "schedule");
    let old_schedule = old
        .and_then(|o| json::at(o, &["spec", "schedule"]))
        .and_then(Value::as_str);
    let time_zone = json::opt_str(s, "timeZone");
    if schedule.is_empty() {
        errs.push(field::required(&path.child("schedule"), ""));
    } else {
        let sp = path.child("schedule");
        if let Err(e) = parse_standard(schedule) {
            errs.push(field::invalid(&sp, Bad::str(schedule), &e));
        }
        let allow_tz = old_schedule.is_some_and(|o| o.contains("TZ"));
        if allow_tz && schedule.contains("TZ") && time_zone.is_some() {
            errs.push(field::invalid(
                &sp,
                Bad::str(schedule),
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        } else if !allow_tz && schedule.contains("TZ") {
            errs.push(field::invalid(
                &sp,
                Bad::str(schedule),
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        }
    }
    nonnegative(s, "startingDeadlineSeconds", &path, errs);
    let old_tz = old
        .and_then(|o| json::at(o, &["spec", "timeZone"]))
        .and_then(Value::as_str);
    if (old.is_none() || old_tz != time_zone)
        && let Some(tz) = time_zone
    {
        errs.extend(validate_time_zone(tz, &path.child("timeZone")));
    }
    match json::string(s, "concurrencyPolicy") {
        "Allow" | "Forbid" | "Replace" => {}
        "" => errs.push(field::required(&path.child("concurrencyPolicy"), "")),
        other => errs.push(field::not_supported(
            &path.child("concurrencyPolicy"),
            Bad::str(other),
            &["Allow", "Forbid", "Replace"],
        )),
    }
    let jp = path.child("jobTemplate");
    let jt = json::field(s, "jobTemplate").unwrap_or(&empty);
    let js = json::field(jt, "spec").unwrap_or(&empty);
    validate_job_spec(js, &jp.child("spec"), errs);
    if let Some(sel) = json::field(js, "selector") {
        errs.push(field::invalid(
            &jp.children(&["spec", "selector"]),
            Bad::Raw(meta::go_label_selector(Some(sel))),
            "`selector` will be auto-generated",
        ));
    }
    if json::boolean(js, "manualSelector") == Some(true) {
        errs.push(field::not_supported(
            &jp.children(&["spec", "manualSelector"]),
            Bad::Bool(true),
            &["nil", "false"],
        ));
    }
    nonnegative(s, "successfulJobsHistoryLimit", &path, errs);
    nonnegative(s, "failedJobsHistoryLimit", &path, errs);
    if old.is_none() {
        let name = json::at(obj, &["metadata", "name"])
            .and_then(Value::as_str)
            .unwrap_or("");
        if name.len() > 52 {
            errs.push(field::invalid(
                &Path::new("metadata").child("name"),
                Bad::str(name),
                "must be no more than 52 characters",
            ));
        }
    }
}

fn validate_time_zone(tz: &str, path: &Path) -> Vec<Cause> {
    let bad = |m: &str| vec![field::invalid(path, Bad::str(tz), m)];
    if tz.is_empty() {
        return bad("timeZone must be nil or non-empty string");
    }
    for part in tz.split('/') {
        let ok = part != "."
            && part != ".."
            && !part.starts_with('-')
            && (1..=14).contains(&part.len())
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+'));
        if !ok {
            return bad(&format!("unknown time zone {tz}"));
        }
    }
    if tz.eq_ignore_ascii_case("Local") {
        return bad(
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        );
    }
    if !tz_known(tz) {
        return bad(&format!("unknown time zone {tz}"));
    }
    Vec::new()
}

/// time.LoadLocation succeeds. Without a zone database on this host every name is accepted,
/// rather than rejecting zones kube-apiserver (which embeds tzdata) would accept.
fn tz_known(tz: &str) -> bool {
    jiff::tz::TimeZone::get(tz).is_ok() || jiff::tz::db().is_definitively_empty()
}

struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

const MONTHS: &[(&str, u32)] = &[
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("may", 5),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];
const DAYS: &[(&str, u32)] = &[
    ("sun", 0),
    ("mon", 1),
    ("tue", 2),
    ("wed", 3),
    ("thu", 4),
    ("fri", 5),
    ("sat", 6),
];

/// Go's strconv.Atoi error text.
fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            field::go_quote(s)
        ));
    }
    s.parse::<i64>().map_err(|_| {
        format!(
            "strconv.Atoi: parsing {}: value out of range",
            field::go_quote(s)
        )
    })
}

fn must_parse_int(s: &str) -> Result<u32, String> {
    let n = atoi(s).map_err(|e| format!("failed to parse int from {s}: {e}"))?;
    if n < 0 {
        return Err(format!("negative number ({n}) not allowed: {s}"));
    }
    u32::try_from(n).map_err(|_| format!("failed to parse int from {s}: value out of range"))
}

fn parse_int_or_name(s: &str, b: &Bounds) -> Result<u32, String> {
    let lower = s.to_lowercase();
    if let Some((_, v)) = b.names.iter().find(|(n, _)| *n == lower) {
        return Ok(*v);
    }
    must_parse_int(s)
}

fn get_range(expr: &str, b: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_high.len() == 1;
    let (start, mut end) = if low_high[0] == "*" || low_high[0] == "?" {
        (b.min, b.max)
    } else {
        let start = parse_int_or_name(low_high[0], b)?;
        let end = match low_high.len() {
            1 => start,
            2 => parse_int_or_name(low_high[1], b)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        (start, end)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            if single {
                end = b.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        ));
    }
    if end > b.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

/// Go's time.ParseDuration, for `@every`.
fn parse_go_duration(s: &str) -> Result<(), String> {
    let err = || format!("time: invalid duration {}", field::go_quote(s));
    let mut rest = s.strip_prefix(['+', '-']).unwrap_or(s);
    if rest == "0" {
        return Ok(());
    }
    if rest.is_empty() {
        return Err(err());
    }
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let num = &rest[..num_len];
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return Err(err());
        }
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        if unit.is_empty() {
            return Err(format!(
                "time: missing unit in duration {}",
                field::go_quote(s)
            ));
        }
        if !matches!(unit, "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return Err(format!(
                "time: unknown unit {} in duration {}",
                field::go_quote(unit),
                field::go_quote(s)
            ));
        }
        rest = &rest[unit_len..];
    }
    Ok(())
}

/// cron.ParseStandard: five fields or a descriptor.
pub(crate) fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec.to_string();
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let Some(space) = spec.find(' ') else {
            return Err(format!("provided bad location {spec}"));
        };
        let eq = spec.find('=').unwrap_or(0);
        let loc = &spec[eq + 1..space];
        if !tz_known(loc) {
            return Err(format!(
                "provided bad location {loc}: unknown time zone {loc}"
            ));
        }
        spec = spec[space..].trim().to_string();
    }
    if spec.starts_with('@') {
        return match spec.as_str() {
            "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight"
            | "@hourly" => Ok(()),
            s => match s.strip_prefix("@every ") {
                Some(d) => {
                    parse_go_duration(d).map_err(|e| format!("failed to parse duration {s}: {e}"))
                }
                None => Err(format!("unrecognized descriptor: {s}")),
            },
        };
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    let bounds = [
        Bounds {
            min: 0,
            max: 59,
            names: &[],
        },
        Bounds {
            min: 0,
            max: 23,
            names: &[],
        },
        Bounds {
            min: 1,
            max: 31,
            names: &[],
        },
        Bounds {
            min: 1,
            max: 12,
            names: MONTHS,
        },
        Bounds {
            min: 0,
            max: 6,
            names: DAYS,
        },
    ];
    for (f, b) in fields.iter().zip(bounds.iter()) {
        for expr in f.split(',').filter(|e| !e.is_empty()) {
            get_range(expr, b)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cron_schedules() {
        for ok in [
            "*/5 * * * *",
            "0 0 * * 0",
            "30 2 1-15/2 jan,Mar mon-fri",
            "@hourly",
            "@every 1h30m",
            "0 0 ? * *",
        ] {
            assert_eq!(parse_standard(ok), Ok(()), "{ok}");
        }
        let bad = [
            ("foo", "expected exactly 5 fields, found 1: [foo]"),
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("70 * * * *", "end of range (70) above maximum (59): 70"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            (
                "5-1 * * * *",
                "beginning of range (5) beyond end of range (1): 5-1",
            ),
            (
                "*/0 * * * *",
                "step of range should be a positive number: */0",
            ),
            (
                "x * * * *",
                "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            ("@often", "unrecognized descriptor: @often"),
            (
                "@every 5x",
                "failed to parse duration @every 5x: time: unknown unit \"x\" in duration \"5x\"",
            ),
        ];
        for (spec, msg) in bad {
            assert_eq!(parse_standard(spec), Err(msg.to_string()), "{spec}");
        }
    }

    #[test]
    fn time_zones() {
        assert!(validate_time_zone("Europe/Berlin", &Path::new("tz")).is_empty());
        assert_eq!(
            validate_time_zone("Mars/Base", &Path::new("tz"))[0].message,
            "Invalid value: \"Mars/Base\": unknown time zone Mars/Base"
        );
    }
}
