//! Query options of list, watch, create, update, patch and delete requests
//! (metav1.ListOptions, CreateOptions, PatchOptions, DeleteOptions), validated as
//! kube-apiserver validates them.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

use crate::error::{ApiError, Cause};
use crate::request_info::parse_bool;
use apimachinery::selectors::{FieldSelector, LabelSelector};

fn first<'a>(q: &'a HashMap<String, Vec<String>>, k: &str) -> Option<&'a str> {
    q.get(k).and_then(|v| v.first()).map(String::as_str)
}

/// `resourceVersionMatch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RvMatch {
    /// Unset.
    Unset,
    /// `NotOlderThan`.
    NotOlderThan,
    /// `Exact`.
    Exact,
}

/// Parsed list/watch options.
#[derive(Clone, Debug)]
pub struct ListOptions {
    /// `labelSelector`.
    pub label_selector: LabelSelector,
    /// `fieldSelector`.
    pub field_selector: FieldSelector,
    /// `resourceVersion` as given (`None`: unset).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub rv_match: RvMatch,
    /// `limit` (0: none).
    pub limit: usize,
    /// `continue`.
    pub continue_token: Option<ContinueToken>,
    /// `watch`.
    pub watch: bool,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<u64>,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
}

/// A decoded continue token (kube's `{"v":"meta.k8s.io/v1","rv":N,"start":"key\u0000"}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContinueToken {
    /// The revision the list is served at.
    pub rv: i64,
    /// Continue after this key (relative to the resource prefix).
    pub start_after: String,
}

impl ContinueToken {
    /// Encodes a token for continuing after `last_key` (relative to the prefix).
    pub fn encode(rv: i64, last_key_relative: &str) -> String {
        let body =
            json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{last_key_relative}\u{0}")});
        URL_SAFE_NO_PAD.encode(body.to_string())
    }

    /// Decodes a token; errors are kube's 400 messages.
    pub fn decode(s: &str) -> Result<ContinueToken, ApiError> {
        let bad = |why: &str| ApiError::bad_request(format!("invalid continue token: {why}"));
        let raw = URL_SAFE_NO_PAD
            .decode(s.trim_end_matches('='))
            .or_else(|_| STANDARD.decode(s))
            .map_err(|_| bad("not base64"))?;
        let v: Value = serde_json::from_slice(&raw).map_err(|_| bad("not JSON"))?;
        if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
            return Err(bad("unknown version"));
        }
        let rv = v
            .get("rv")
            .and_then(Value::as_i64)
            .ok_or_else(|| bad("missing resource version"))?;
        let start = v
            .get("start")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("missing start key"))?;
        // kube stores "<lastKey>\u0000": continuing "from" that means "after lastKey".
        let start_after = start.strip_suffix('\u{0}').unwrap_or(start);
        if start_after.contains("..") || start_after.starts_with('/') {
            return Err(bad("invalid start key"));
        }
        Ok(ContinueToken {
            rv,
            start_after: start_after.to_string(),
        })
    }
}

impl ListOptions {
    /// Parses and validates list/watch query options.
    pub fn parse(q: &HashMap<String, Vec<String>>) -> Result<ListOptions, ApiError> {
        let opts = ListOptions::parse_raw(q)?;
        opts.validate()?;
        Ok(opts)
    }

    fn parse_raw(q: &HashMap<String, Vec<String>>) -> Result<ListOptions, ApiError> {
        let label_selector = match first(q, "labelSelector") {
            Some(s) => LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.0))?,
            None => LabelSelector::default(),
        };
        let field_selector = match first(q, "fieldSelector") {
            Some(s) => FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.0))?,
            None => FieldSelector::default(),
        };
        let resource_version = first(q, "resourceVersion")
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        if let Some(rv) = &resource_version {
            crate::object::parse_resource_version(rv)?;
        }
        let rv_match = match first(q, "resourceVersionMatch") {
            None | Some("") => RvMatch::Unset,
            Some("NotOlderThan") => RvMatch::NotOlderThan,
            Some("Exact") => RvMatch::Exact,
            Some(other) => {
                return Err(ApiError::invalid_message(format!(
                    "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\""
                )));
            }
        };
        let limit = match first(q, "limit") {
            None | Some("") => 0,
            Some(s) => {
                let n: i64 = s.parse().map_err(|_| {
                    ApiError::bad_request(format!("invalid value for limit: \"{s}\""))
                })?;
                usize::try_from(n.max(0)).unwrap_or(usize::MAX)
            }
        };
        let continue_token = match first(q, "continue") {
            None | Some("") => None,
            Some(s) => Some(ContinueToken::decode(s)?),
        };
        let watch = first(q, "watch").and_then(parse_bool).unwrap_or(false);
        let allow_bookmarks = first(q, "allowWatchBookmarks")
            .and_then(parse_bool)
            .unwrap_or(false);
        let timeout_seconds = match first(q, "timeoutSeconds") {
            None | Some("") => None,
            // kube's field is an int64: anything past it is refused, not wrapped.
            Some(s) => Some(
                s.parse::<i64>()
                    .ok()
                    .and_then(|n| u64::try_from(n).ok())
                    .ok_or_else(|| {
                        ApiError::bad_request(format!("invalid value for timeoutSeconds: \"{s}\""))
                    })?,
            ),
        };
        let send_initial_events = first(q, "sendInitialEvents").and_then(parse_bool);
        let opts = ListOptions {
            label_selector,
            field_selector,
            resource_version,
            rv_match,
            limit,
            continue_token,
            watch,
            allow_bookmarks,
            timeout_seconds,
            send_initial_events,
        };
        Ok(opts)
    }

    /// kube's ValidateListOptions.
    fn validate(&self) -> Result<(), ApiError> {
        let invalid = |field: &str, msg: &str| {
            ApiError::invalid_message(format!(
                "ListOptions.meta.k8s.io \"\" is invalid: {field}: {msg}"
            ))
        };
        if self.rv_match != RvMatch::Unset {
            if self.watch {
                return Err(invalid(
                    "resourceVersionMatch",
                    "Forbidden: resourceVersionMatch is forbidden for watch",
                ));
            }
            match &self.resource_version {
                None => {
                    return Err(invalid(
                        "resourceVersionMatch",
                        "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                    ));
                }
                Some(rv) if rv == "0" && self.rv_match == RvMatch::Exact => {
                    return Err(invalid(
                        "resourceVersionMatch",
                        "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                    ));
                }
                _ => {}
            }
            if self.continue_token.is_some() {
                return Err(invalid(
                    "resourceVersionMatch",
                    "Forbidden: resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
        if self.continue_token.is_some()
            && self.resource_version.as_deref().is_some_and(|rv| rv != "0")
        {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        if self.send_initial_events == Some(true) && !self.watch {
            return Err(invalid(
                "sendInitialEvents",
                "Forbidden: sendInitialEvents is forbidden for list",
            ));
        }
        Ok(())
    }
}

impl ListOptions {
    /// Parses watch options: like [`ListOptions::parse`], but resourceVersionMatch is
    /// allowed (as NotOlderThan) together with sendInitialEvents, the streaming-list form.
    pub fn parse_watch(q: &HashMap<String, Vec<String>>) -> Result<ListOptions, ApiError> {
        let mut opts = ListOptions::parse_raw(q)?;
        opts.watch = true;
        if opts.send_initial_events == Some(true) {
            if opts.rv_match != RvMatch::NotOlderThan {
                return Err(ApiError::invalid_message(
                    "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            let rv_match = opts.rv_match;
            opts.rv_match = RvMatch::Unset;
            opts.validate()?;
            opts.rv_match = rv_match;
        } else {
            opts.validate()?;
        }
        Ok(opts)
    }
}

/// `fieldValidation` of writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    /// Unknown/duplicate fields are an error.
    Strict,
    /// They are reported as warnings (the default).
    Warn,
    /// They are dropped silently.
    Ignore,
}

/// Which request's options are parsed: they are validated as kube validates
/// CreateOptions, UpdateOptions and PatchOptions, and errors name that kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionsKind {
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH; `apply` for server-side apply patches.
    Patch {
        /// The patch is `application/apply-patch+yaml`.
        apply: bool,
    },
}

impl OptionsKind {
    fn kind(self) -> &'static str {
        match self {
            OptionsKind::Create => "CreateOptions",
            OptionsKind::Update => "UpdateOptions",
            OptionsKind::Patch { .. } => "PatchOptions",
        }
    }
}

/// Options shared by create, update and patch.
#[derive(Clone, Debug)]
pub struct WriteOptions {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `fieldManager`.
    pub field_manager: Option<String>,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `force` (apply patches only).
    pub force: Option<bool>,
}

fn cause(reason: &str, field: &str, message: impl Into<String>) -> Cause {
    Cause {
        reason: reason.into(),
        message: message.into(),
        field: field.into(),
    }
}

/// A `[]string` as Go's `%#v` prints it (`[]string{"a", "b"}`), as NotSupported errors
/// show a bad `dryRun`.
fn go_string_slice(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| apiextensions::go_quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// ValidateDryRun: only `All` is allowed.
fn dry_run_causes(values: &[String]) -> Vec<Cause> {
    if values.iter().all(|d| d == "All") {
        return Vec::new();
    }
    vec![cause(
        "FieldValueNotSupported",
        "dryRun",
        format!(
            "Unsupported value: {}: supported values: \"All\"",
            go_string_slice(values)
        ),
    )]
}

/// Go's unicode.IsPrint, as ValidateFieldManager applies it: letters, marks, numbers,
/// punctuation, symbols and the ASCII space; no controls, other spaces or format characters.
fn is_go_printable(c: char) -> bool {
    !(c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}'))
}

/// ValidateFieldManager: at most 128 bytes, printable characters only.
fn field_manager_causes(manager: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    if manager.len() > 128 {
        out.push(cause(
            "FieldValueTooLong",
            "fieldManager",
            "Too long: may not be more than 128 bytes",
        ));
    }
    for (i, c) in manager.char_indices() {
        if !is_go_printable(c) {
            out.push(cause(
                "FieldValueInvalid",
                "fieldManager",
                format!(
                    "Invalid value: {}: invalid character U+{:04X} (at position {i})",
                    apiextensions::go_quote(manager),
                    u32::from(c)
                ),
            ));
        }
    }
    out
}

impl WriteOptions {
    /// Parses and validates write options as kube's ValidateCreateOptions,
    /// ValidateUpdateOptions and ValidatePatchOptions do: every problem is a cause of one 422
    /// naming the options kind.
    pub fn parse(
        q: &HashMap<String, Vec<String>>,
        kind: OptionsKind,
    ) -> Result<WriteOptions, ApiError> {
        let dry_run_values: &[String] = q.get("dryRun").map(Vec::as_slice).unwrap_or(&[]);
        let field_manager = first(q, "fieldManager")
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let raw_validation = first(q, "fieldValidation").unwrap_or("");
        let force = first(q, "force").and_then(parse_bool);
        let mut causes = Vec::new();
        if let OptionsKind::Patch { apply } = kind {
            if !apply && force.is_some() {
                causes.push(cause(
                    "FieldValueForbidden",
                    "force",
                    "Forbidden: may not be specified for non-apply patch",
                ));
            }
            if apply && field_manager.is_none() {
                causes.push(cause(
                    "FieldValueRequired",
                    "fieldManager",
                    "Required value: is required for apply patch",
                ));
            }
        }
        causes.extend(field_manager_causes(
            field_manager.as_deref().unwrap_or_default(),
        ));
        causes.extend(dry_run_causes(dry_run_values));
        let field_validation = match raw_validation {
            "" | "Warn" => FieldValidation::Warn,
            "Strict" => FieldValidation::Strict,
            "Ignore" => FieldValidation::Ignore,
            other => {
                causes.push(cause(
                    "FieldValueNotSupported",
                    "fieldValidation",
                    format!(
                        "Unsupported value: {}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
                        apiextensions::go_quote(other)
                    ),
                ));
                FieldValidation::Warn
            }
        };
        if !causes.is_empty() {
            return Err(ApiError::invalid("meta.k8s.io", kind.kind(), "", causes));
        }
        Ok(WriteOptions {
            dry_run: !dry_run_values.is_empty(),
            field_manager,
            field_validation,
            force,
        })
    }
}

/// `propagationPolicy` of deletes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// Delete dependents in the background.
    Background,
    /// Delete dependents first.
    Foreground,
    /// Keep dependents.
    Orphan,
}

/// Parsed DeleteOptions (body and query).
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_rv: Option<String>,
    /// `propagationPolicy` (or `orphanDependents`).
    pub propagation: Option<Propagation>,
}

impl DeleteOptions {
    /// Parses options from the query and an optional JSON body, validated as kube's
    /// ValidateDeleteOptions (one 422 naming every problem).
    pub fn parse(
        q: &HashMap<String, Vec<String>>,
        body: Option<&Value>,
    ) -> Result<DeleteOptions, ApiError> {
        let mut o = DeleteOptions::default();
        let mut dry_run: Vec<String> = q.get("dryRun").cloned().unwrap_or_default();
        if let Some(g) = first(q, "gracePeriodSeconds") {
            o.grace_period_seconds = Some(g.parse().map_err(|_| {
                ApiError::bad_request(format!("invalid value for gracePeriodSeconds: \"{g}\""))
            })?);
        }
        let mut propagation = first(q, "propagationPolicy").map(str::to_string);
        let mut orphan = first(q, "orphanDependents").and_then(parse_bool);
        if let Some(b) = body {
            if !b.is_object() {
                return Err(ApiError::bad_request("DeleteOptions must be a JSON object"));
            }
            if let Some(v) = b.get("dryRun").and_then(Value::as_array) {
                dry_run = v
                    .iter()
                    .map(|d| {
                        d.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| d.to_string())
                    })
                    .collect();
            }
            if let Some(g) = b.get("gracePeriodSeconds").filter(|v| !v.is_null()) {
                o.grace_period_seconds = Some(g.as_i64().ok_or_else(|| {
                    ApiError::bad_request("gracePeriodSeconds must be an integer")
                })?);
            }
            if let Some(p) = b.get("preconditions").and_then(Value::as_object) {
                o.precondition_uid = p.get("uid").and_then(Value::as_str).map(str::to_string);
                o.precondition_rv = p
                    .get("resourceVersion")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            if let Some(p) = b.get("propagationPolicy").and_then(Value::as_str) {
                propagation = Some(p.to_string());
            }
            if let Some(od) = b.get("orphanDependents").and_then(Value::as_bool) {
                orphan = Some(od);
            }
        }
        let mut causes = Vec::new();
        if let (Some(p), Some(_)) = (&propagation, orphan) {
            causes.push(cause(
                "FieldValueInvalid",
                "propagationPolicy",
                format!(
                    "Invalid value: {}: orphanDependents and deletionPropagation cannot be both set",
                    apiextensions::go_quote(p)
                ),
            ));
        }
        o.propagation = match propagation.as_deref() {
            None => orphan.map(|b| {
                if b {
                    Propagation::Orphan
                } else {
                    Propagation::Background
                }
            }),
            Some("Background") => Some(Propagation::Background),
            Some("Foreground") => Some(Propagation::Foreground),
            Some("Orphan") => Some(Propagation::Orphan),
            Some(other) => {
                causes.push(cause(
                    "FieldValueNotSupported",
                    "propagationPolicy",
                    format!(
                        "Unsupported value: {}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                        apiextensions::go_quote(other)
                    ),
                ));
                None
            }
        };
        causes.extend(dry_run_causes(&dry_run));
        if !causes.is_empty() {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "DeleteOptions",
                "",
                causes,
            ));
        }
        o.dry_run = !dry_run.is_empty();
        // rest.BeforeDelete: a negative grace period means one second.
        if let Some(g) = o.grace_period_seconds
            && g < 0
        {
            o.grace_period_seconds = Some(1);
        }
        Ok(o)
    }
}

/// Who is writing (for managedFields and admission).
#[derive(Clone, Debug, Default)]
pub struct WriteContext {
    /// The field manager (fieldManager query or derived from the User-Agent).
    pub manager: String,
    /// `dryRun=All`: run everything, store nothing.
    pub dry_run: bool,
    /// The write is a server-side apply, which records field ownership itself.
    pub apply: bool,
}

impl WriteContext {
    /// From write options and a default manager name.
    pub fn new(opts: &WriteOptions, default_manager: &str) -> WriteContext {
        WriteContext {
            manager: opts
                .field_manager
                .clone()
                .unwrap_or_else(|| default_manager.to_string()),
            dry_run: opts.dry_run,
            apply: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_info::parse_query;

    #[test]
    fn continue_token_round_trip() {
        let t = ContinueToken::encode(42, "default/c1");
        let d = ContinueToken::decode(&t).unwrap();
        assert_eq!(d.rv, 42);
        assert_eq!(d.start_after, "default/c1");
        assert!(ContinueToken::decode("!!!").is_err());
        assert!(ContinueToken::decode(&URL_SAFE_NO_PAD.encode("{\"v\":\"x\"}")).is_err());
    }

    #[test]
    fn list_option_validation() {
        let ok = |q: &str| ListOptions::parse(&parse_query(Some(q)));
        assert!(ok("limit=500&resourceVersion=0").is_ok());
        assert_eq!(ok("resourceVersionMatch=Exact").unwrap_err().code, 422);
        assert_eq!(
            ok("resourceVersion=0&resourceVersionMatch=Exact")
                .unwrap_err()
                .code,
            422
        );
        assert_eq!(ok("labelSelector=a%20in%20(").unwrap_err().code, 400);
        assert_eq!(ok("resourceVersion=abc").unwrap_err().code, 400);
        let t = ContinueToken::encode(5, "a");
        assert_eq!(
            ok(&format!("continue={t}&resourceVersion=5"))
                .unwrap_err()
                .code,
            400
        );
        assert!(
            ListOptions::parse_watch(&parse_query(Some(
                "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
            )))
            .is_ok()
        );
    }

    /// Numbers at and past the ends of kube's int64 fields: the largest is taken, anything
    /// beyond is a 400, never an overflow.
    #[test]
    fn numbers_at_the_edges() {
        let watch = |q: &str| ListOptions::parse_watch(&parse_query(Some(q)));
        let max = i64::MAX.to_string();
        let t = watch(&format!("watch=1&timeoutSeconds={max}")).unwrap();
        assert_eq!(t.timeout_seconds, Some(i64::MAX as u64));
        for bad in [
            "18446744073709551615",
            "9223372036854775808",
            "-1",
            "1e3",
            "\u{e9}",
        ] {
            let err = watch(&format!("watch=1&timeoutSeconds={bad}")).unwrap_err();
            assert_eq!(err.code, 400, "{bad}");
            assert!(
                err.message.contains("timeoutSeconds"),
                "{bad}: {}",
                err.message
            );
        }
        let list = |q: &str| ListOptions::parse(&parse_query(Some(q)));
        assert_eq!(
            list(&format!("limit={max}")).unwrap().limit,
            i64::MAX as usize
        );
        assert_eq!(list("limit=-5").unwrap().limit, 0);
        assert_eq!(list("limit=99999999999999999999").unwrap_err().code, 400);
        let grace = |q: &str| DeleteOptions::parse(&parse_query(Some(q)), None);
        assert_eq!(
            grace(&format!("gracePeriodSeconds={max}"))
                .unwrap()
                .grace_period_seconds,
            Some(i64::MAX)
        );
        assert_eq!(
            grace("gracePeriodSeconds=9223372036854775808")
                .unwrap_err()
                .code,
            400
        );
    }

    #[test]
    fn delete_options() {
        let body = json!({"propagationPolicy": "Foreground", "preconditions": {"uid": "u"}});
        let d = DeleteOptions::parse(&HashMap::new(), Some(&body)).unwrap();
        assert_eq!(d.propagation, Some(Propagation::Foreground));
        assert_eq!(d.precondition_uid.as_deref(), Some("u"));
        let both = json!({"propagationPolicy": "Orphan", "orphanDependents": true});
        assert_eq!(
            DeleteOptions::parse(&HashMap::new(), Some(&both))
                .unwrap_err()
                .code,
            422
        );
    }

    #[test]
    fn write_options_are_validated_as_kube_does() {
        let parse = |q: &str, k| WriteOptions::parse(&parse_query(Some(q)), k);
        let ok = parse(
            "dryRun=All&fieldManager=me&fieldValidation=Strict",
            OptionsKind::Create,
        )
        .unwrap();
        assert!(ok.dry_run);
        assert_eq!(ok.field_manager.as_deref(), Some("me"));
        assert_eq!(ok.field_validation, FieldValidation::Strict);

        let e = parse("fieldValidation=Loose", OptionsKind::Create).unwrap_err();
        assert_eq!((e.code, e.reason), (422, "Invalid"));
        assert_eq!(
            e.message,
            "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Loose\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
        );
        let e = parse("dryRun=All&dryRun=Some", OptionsKind::Update).unwrap_err();
        assert_eq!(
            e.message,
            "UpdateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"All\", \"Some\"}: supported values: \"All\""
        );
        let e = parse("force=true", OptionsKind::Patch { apply: false }).unwrap_err();
        assert_eq!(
            e.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
        );
        let e = parse("", OptionsKind::Patch { apply: true }).unwrap_err();
        assert_eq!(
            e.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        );
        assert!(
            parse(
                "force=true&fieldManager=m",
                OptionsKind::Patch { apply: true }
            )
            .is_ok()
        );
        let long = "m".repeat(129);
        let e = parse(&format!("fieldManager={long}"), OptionsKind::Create).unwrap_err();
        assert_eq!(
            e.message,
            "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
        );
        let e = parse("fieldManager=a%07b", OptionsKind::Create).unwrap_err();
        assert_eq!(
            e.message,
            "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: \"a\\ab\": invalid character U+0007 (at position 1)"
        );
        // Several problems are one error with every cause, in kube's order.
        let e = parse(
            "fieldValidation=x&force=1&dryRun=y",
            OptionsKind::Patch { apply: false },
        )
        .unwrap_err();
        let fields: Vec<&str> = e
            .details
            .as_ref()
            .unwrap()
            .causes
            .iter()
            .map(|c| c.field.as_str())
            .collect();
        assert_eq!(fields, ["force", "dryRun", "fieldValidation"]);
    }

    #[test]
    fn delete_options_are_validated_as_kube_does() {
        let q = |s: &str| parse_query(Some(s));
        let d = DeleteOptions::parse(&q("gracePeriodSeconds=-5"), None).unwrap();
        assert_eq!(d.grace_period_seconds, Some(1), "negative means one second");
        let d =
            DeleteOptions::parse(&HashMap::new(), Some(&json!({"gracePeriodSeconds": 0}))).unwrap();
        assert_eq!(d.grace_period_seconds, Some(0));
        let both = json!({"propagationPolicy": "Background", "orphanDependents": true});
        assert_eq!(
            DeleteOptions::parse(&HashMap::new(), Some(&both))
                .unwrap_err()
                .message,
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Background\": orphanDependents and deletionPropagation cannot be both set"
        );
        let e = DeleteOptions::parse(&q("propagationPolicy=Later&dryRun=x"), None).unwrap_err();
        assert_eq!(
            e.message,
            "DeleteOptions.meta.k8s.io \"\" is invalid: [propagationPolicy: Unsupported value: \"Later\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\", dryRun: Unsupported value: []string{\"x\"}: supported values: \"All\"]"
        );
        let d = DeleteOptions::parse(&HashMap::new(), Some(&json!({"dryRun": ["All"]}))).unwrap();
        assert!(d.dry_run);
    }
}
