//! `karmada-rs interpret`: `karmadactl interpret` without a control plane. `--check` validates
//! the ResourceInterpreterCustomizations of a file (every script compiles); `--operation OP`
//! runs one operation of them on local objects and prints each result as a YAML document, so
//! scripts can be written and tested before they are applied. Without `-f`, the operation is
//! run as the control plane would run it for the object's kind: by the customizations stored
//! in the control plane `--kubeconfig` names, layered over the bundled third-party ones and
//! the built-in interpreter (Karmada's `customResourceInterpreterImpl` order).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use apimachinery::patch::go_json_type;
use clap::Args;
use controllers::interpreter::ResourceInterpreter;
use karmada_api::config::v1alpha1::ResourceInterpreterCustomization;
use karmada_api::work::v1alpha2::AggregatedStatusItem;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use lua::Operation;
use serde::Deserialize as _;
use serde_json::{Map, Value};

/// Flags of `karmada-rs interpret` (karmadactl's names).
#[derive(Args, Debug)]
pub struct InterpretArgs {
    /// Filename or directory of the customizations (YAML or JSON; `-` reads stdin). Without
    /// it, the customizations the control plane uses for the object's kind run.
    #[arg(
        short = 'f',
        long = "filename",
        env = "KARMADA_RS_FILENAME",
        value_delimiter = ','
    )]
    pub filename: Vec<String>,
    /// Without -f: the control plane whose stored ResourceInterpreterCustomizations override
    /// the bundled ones (without it, only the bundled ones and the built-in interpreter). Not
    /// read with -f, whose customizations alone run.
    #[arg(long, env = "KARMADA_RS_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Context in the --kubeconfig; its current context by default.
    #[arg(long, env = "KARMADA_RS_KARMADA_CONTEXT", requires = "kubeconfig")]
    pub karmada_context: Option<String>,
    /// Process the directories given with -f recursively.
    #[arg(short = 'R', long, env = "KARMADA_RS_RECURSIVE")]
    pub recursive: bool,
    /// Validates the given ResourceInterpreterCustomization configuration(s).
    #[arg(long, env = "KARMADA_RS_CHECK", conflicts_with = "operation")]
    pub check: bool,
    /// The interpret operation to use. One of: (Retain, InterpretReplica, InterpretComponent,
    /// ReviseReplica, InterpretStatus, AggregateStatus, InterpretHealth, InterpretDependency).
    #[arg(long, env = "KARMADA_RS_OPERATION")]
    pub operation: Option<String>,
    /// File identifying the resource to use as desiredObj argument in rule script.
    #[arg(long, env = "KARMADA_RS_DESIRED_FILE")]
    pub desired_file: Option<String>,
    /// File identifying the resource to use as observedObj argument in rule script.
    #[arg(long, env = "KARMADA_RS_OBSERVED_FILE")]
    pub observed_file: Option<String>,
    /// File identifying the resources to use as statusItems argument in rule script.
    #[arg(long, env = "KARMADA_RS_STATUS_FILE")]
    pub status_file: Option<String>,
    /// The desiredReplica argument in rule script.
    #[arg(long, default_value_t = 0, env = "KARMADA_RS_DESIRED_REPLICA")]
    pub desired_replica: i32,
}

/// One document read from a file, with where it came from.
struct Doc {
    source: String,
    value: Value,
}

/// Runs the command and returns its exit code: 1 when a check failed or the command could
/// not run (said on stderr as kubectl's `CheckErr` says it), 0 otherwise — also when the
/// operation itself failed, as karmadactl (the failure is printed).
pub async fn interpret(a: InterpretArgs) -> i32 {
    match run(a).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    }
}

async fn run(a: InterpretArgs) -> anyhow::Result<i32> {
    let operation = match &a.operation {
        Some(name) => Some(Operation::parse(name).ok_or_else(|| {
            anyhow::anyhow!(
                "operation {name} is not supported. Use one of: {}",
                Operation::ALL.map(Operation::name).join(", ")
            )
        })?),
        None => None,
    };
    if a.filename.is_empty() && a.check {
        bail!("--check validates the customizations of a file: name it with -f");
    }
    let mut docs = Vec::new();
    for f in &a.filename {
        docs.extend(read_docs(f, a.recursive, Lists::Unpack)?);
    }
    if docs.is_empty() && !a.filename.is_empty() {
        bail!("no objects passed to interpret");
    }
    let desired = single_object(a.desired_file.as_deref())?;
    let observed = single_object(a.observed_file.as_deref())?;
    let status = match a.status_file.as_deref() {
        Some(f) => Some(
            read_docs(f, false, Lists::Keep)?
                .into_iter()
                .map(|d| {
                    status_item(d.value)
                        .with_context(|| format!("fail to get status items: {}", d.source))
                })
                .collect::<anyhow::Result<Vec<_>>>()?,
        ),
        None => None,
    };
    if a.check {
        return Ok(check(&docs, &mut std::io::stdout().lock()));
    }
    let Some(op) = operation else {
        bail!("operation is not set for executing");
    };
    let args = RuleArgs {
        desired,
        observed,
        status,
        replica: a.desired_replica,
    };
    if a.filename.is_empty() {
        let interpreter = control_plane_interpreter(&a).await?;
        let results = execute_installed(&interpreter, op, &args).await?;
        std::io::stdout()
            .lock()
            .write_all(&print_results(&results))?;
        return Ok(0);
    }
    let customizations = docs
        .into_iter()
        .map(|d| as_customization(&d))
        .collect::<anyhow::Result<Vec<_>>>()?;
    match execute(&customizations, op, &args).await {
        Ok(results) => {
            let mut out = std::io::stdout().lock();
            out.write_all(&print_results(&results))?;
        }
        Err(e) => eprintln!("Execute {} error: {e}", op.name()),
    }
    Ok(0)
}

/// Whether a `kind: List` document stands for its items (kubectl's builder reading objects)
/// or is one document like any other (karmadactl's reader of status items).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lists {
    Unpack,
    Keep,
}

/// The documents of a file, directory or stdin: YAML streams (JSON is YAML).
fn read_docs(path: &str, recursive: bool, lists: Lists) -> anyhow::Result<Vec<Doc>> {
    if path.starts_with("http://") || path.starts_with("https://") {
        bail!("{path}: reading from a URL is not supported; download the file first");
    }
    if path == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        return parse_docs("STDIN", &text, lists);
    }
    let p = Path::new(path);
    if p.is_dir() {
        let mut out = Vec::new();
        for file in dir_files(p, recursive)? {
            out.extend(read_docs(&file.to_string_lossy(), recursive, lists)?);
        }
        return Ok(out);
    }
    let text = std::fs::read_to_string(p)
        .with_context(|| format!("the path \"{path}\" does not exist or cannot be read"))?;
    parse_docs(path, &text, lists)
}

/// The YAML and JSON files of a directory, sorted, as kubectl's builder visits them.
fn dir_files(dir: &Path, recursive: bool) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for e in entries {
        if e.is_dir() {
            if recursive {
                files.extend(dir_files(&e, true)?);
            }
        } else if matches!(
            e.extension().and_then(|x| x.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            files.push(e);
        }
    }
    Ok(files)
}

fn parse_docs(source: &str, text: &str, lists: Lists) -> anyhow::Result<Vec<Doc>> {
    let mut out = Vec::new();
    for d in serde_yaml::Deserializer::from_str(text) {
        let yaml =
            serde_yaml::Value::deserialize(d).with_context(|| format!("error parsing {source}"))?;
        let value: Value =
            serde_json::to_value(yaml).with_context(|| format!("error parsing {source}"))?;
        match value {
            Value::Null => {}
            Value::Object(ref m)
                if lists == Lists::Unpack
                    && m.get("kind").and_then(Value::as_str) == Some("List") =>
            {
                for item in m
                    .get("items")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    out.push(Doc {
                        source: source.to_owned(),
                        value: item.clone(),
                    });
                }
            }
            value => out.push(Doc {
                source: source.to_owned(),
                value,
            }),
        }
    }
    Ok(out)
}

/// One document of a status file as the script receives it: what Go's JSON decoding into an
/// `AggregatedStatusItem` and encoding back gives (karmadactl decodes each document so). Field
/// names match in any case, missing and `null` fields are zero, unknown fields are dropped, any
/// `health` string is kept; a field of the wrong type, or a document that is not an object,
/// is an error.
fn status_item(doc: Value) -> anyhow::Result<Value> {
    const TYPE: &str = "v1alpha2.AggregatedStatusItem";
    const FIELDS: [&str; 5] = [
        "clusterName",
        "status",
        "applied",
        "appliedMessage",
        "health",
    ];
    let fields = match doc {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => bail!(
            "json: cannot unmarshal {} into Go value of type {TYPE}",
            go_json_type(&other)
        ),
    };
    let mut cluster_name = String::new();
    let (mut status, mut applied) = (None, false);
    let (mut applied_message, mut health) = (String::new(), String::new());
    // Go keeps the last of two keys naming one field (`clusterName`, `ClusterName`) in document
    // order, which the parsed document no longer has: the exactly spelled one wins.
    let mut keys: Vec<&String> = fields.keys().collect();
    keys.sort_by_key(|k| FIELDS.contains(&k.as_str()));
    for key in keys {
        let v = &fields[key];
        let Some(field) = FIELDS.into_iter().find(|f| key == f || go_fold_eq(key, f)) else {
            continue;
        };
        let wrong = || {
            anyhow::anyhow!(
                "json: cannot unmarshal {} into Go struct field AggregatedStatusItem.{field} of type {}",
                go_json_type(v),
                if field == "applied" { "bool" } else { "string" }
            )
        };
        match (field, v) {
            (_, Value::Null) if field != "status" => {}
            ("status", Value::Null) => status = None,
            ("status", v) => status = Some(v.clone()),
            ("applied", Value::Bool(b)) => applied = *b,
            ("clusterName", Value::String(s)) => cluster_name = s.clone(),
            ("appliedMessage", Value::String(s)) => applied_message = s.clone(),
            ("health", Value::String(s)) => health = s.clone(),
            _ => return Err(wrong()),
        }
    }
    let mut out = Map::new();
    out.insert("clusterName".into(), Value::String(cluster_name));
    if let Some(s) = status {
        out.insert("status".into(), s);
    }
    if applied {
        out.insert("applied".into(), Value::Bool(true));
    }
    if !applied_message.is_empty() {
        out.insert("appliedMessage".into(), Value::String(applied_message));
    }
    if !health.is_empty() {
        out.insert("health".into(), Value::String(health));
    }
    Ok(Value::Object(out))
}

/// Whether a JSON key names an ASCII field as Go's decoder matches names (`bytes.EqualFold`):
/// in any case, and with the long s (ſ) folding to s, which none of the fields' other letters
/// has an equivalent of.
fn go_fold_eq(key: &str, field: &str) -> bool {
    let mut k = key.chars();
    for f in field.chars() {
        let Some(c) = k.next() else {
            return false;
        };
        let folds = c.eq_ignore_ascii_case(&f) || (c == '\u{17F}' && f.eq_ignore_ascii_case(&'s'));
        if !folds {
            return false;
        }
    }
    k.next().is_none()
}

fn single_object(path: Option<&str>) -> anyhow::Result<Option<Value>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let mut docs = read_docs(path, false, Lists::Unpack)?;
    match docs.len() {
        0 => bail!("no objects passed to interpret"),
        1 => Ok(docs.pop().map(|d| d.value)),
        n => bail!("get {n} objects, expect one at most"),
    }
}

fn as_customization(d: &Doc) -> anyhow::Result<ResourceInterpreterCustomization> {
    let av = d
        .value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = d.value.get("kind").and_then(Value::as_str).unwrap_or("");
    if av != "config.karmada.io/v1alpha1" || kind != "ResourceInterpreterCustomization" {
        bail!(
            "not a ResourceInterpreterCustomization, got {}",
            gvk(av, kind)
        );
    }
    serde_json::from_value(d.value.clone())
        .with_context(|| format!("{}: not a valid ResourceInterpreterCustomization", d.source))
}

/// A GroupVersionKind as Go's `%v` prints it (`/, Kind=` for an empty one).
fn gvk(api_version: &str, kind: &str) -> String {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    format!("{group}/{version}, Kind={kind}")
}

/// `runCheck`: per customization, its target and each rule's script PASS, ERROR or UNSET,
/// aligned as kubectl's tab writer aligns them. Returns the exit code.
fn check(docs: &[Doc], out: &mut impl Write) -> i32 {
    let rt = lua::Runtime::new(std::sync::Arc::new(lua::NoPods), lua::Limits::default());
    let mut text = String::new();
    let mut failed = false;
    for d in docs {
        text.push_str("-----------------------------------\n");
        let name = d.value["metadata"]["name"].as_str().unwrap_or("");
        let source = if name.is_empty() { &d.source } else { name };
        text.push_str(&format!("SOURCE: {source}\n"));
        let c = match as_customization(d) {
            Ok(c) => c,
            Err(e) => {
                failed = true;
                text.push_str(&format!("{e:#}\n"));
                continue;
            }
        };
        let target = &c.spec.target;
        if target.kind.is_empty() {
            failed = true;
            text.push_str("target.kind no set\n");
            continue;
        }
        if target.api_version.is_empty() {
            failed = true;
            text.push_str("target.apiVersion no set\n");
            continue;
        }
        text.push_str(&format!(
            "TARGET: {} {}\t\n",
            target.api_version, target.kind
        ));
        text.push_str("RULERS:\n");
        for op in Operation::ALL {
            text.push_str(&format!("    {}:\t", op.name()));
            match c.spec.customizations.script(op) {
                None | Some("") => text.push_str("UNSET\n"),
                Some(source) => match rt.check_syntax(source) {
                    Ok(()) => text.push_str("PASS\n"),
                    Err(e) => {
                        failed = true;
                        text.push_str(&format!("ERROR: {}\t\n", e.to_string().trim()));
                    }
                },
            }
        }
    }
    let _ = out.write_all(crate::cmd::printer::tabwriter(&text).as_bytes());
    i32::from(failed)
}

/// The arguments of a rule (`interpreter.RuleArgs`).
struct RuleArgs {
    desired: Option<Value>,
    observed: Option<Value>,
    /// The status items as the script receives them; `None` without a status file (the
    /// script's `statusItems` is then nil, an empty file gives an empty table).
    status: Option<Vec<Value>>,
    replica: i32,
}

impl RuleArgs {
    fn desired(&self) -> anyhow::Result<&Value> {
        self.desired
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("desired, desired-file options are not set"))
    }

    fn observed(&self) -> anyhow::Result<&Value> {
        self.observed
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("observed, observed-file options are not set"))
    }

    /// The object an operation runs on: the desired object for Retain (which also reads the
    /// observed one), else the one object given.
    fn operand(&self, op: Operation) -> anyhow::Result<&Value> {
        if op == Operation::Retain {
            self.desired()
        } else {
            self.object()
        }
    }

    fn object(&self) -> anyhow::Result<&Value> {
        match (&self.desired, &self.observed) {
            (None, None) => bail!("desired-file, observed-file options are not set"),
            (Some(_), Some(_)) => {
                bail!("you can not specify both desired-file and observed-file options")
            }
            (Some(o), None) | (None, Some(o)) => Ok(o),
        }
    }
}

/// Runs one operation of the customizations (`Rule.Run` on a `ConfigurableInterpreter`):
/// the named results in karmadactl's order.
async fn execute(
    customizations: &[ResourceInterpreterCustomization],
    op: Operation,
    args: &RuleArgs,
) -> anyhow::Result<Vec<(&'static str, Value)>> {
    let interpreter = ResourceInterpreter::without_shipped(lua::Limits::default());
    interpreter.load_customizations(customizations);
    let object = args.operand(op)?;
    let av = object["apiVersion"].as_str().unwrap_or("");
    let kind = object["kind"].as_str().unwrap_or("");
    if !interpreter.customized(av, kind, op) {
        bail!("rule is not enabled");
    }
    let aggregate = || async {
        let items = args.status.clone().map_or(Value::Null, Value::Array);
        let aggregated = interpreter.aggregate_customized(object, items).await;
        aggregated?.ok_or_else(|| anyhow::anyhow!("rule is not enabled"))
    };
    run_operation(&interpreter, op, object, args, aggregate).await
}

/// Runs one operation as the control plane runs it for the object's kind: a customization
/// stored in the control plane, else a bundled one, else the built-in interpreter. The
/// status items of an aggregation are always a list (empty without a status file), as the
/// control plane passes them.
async fn execute_installed(
    interpreter: &ResourceInterpreter,
    op: Operation,
    args: &RuleArgs,
) -> anyhow::Result<Vec<(&'static str, Value)>> {
    let object = args.operand(op)?;
    let av = object["apiVersion"].as_str().unwrap_or("");
    let kind = object["kind"].as_str().unwrap_or("");
    if av.is_empty() || kind.is_empty() {
        bail!("the object to interpret has no apiVersion or kind");
    }
    if !interpreter.hook_enabled(av, kind, op) {
        bail!(
            "no customization interprets {} for {av} {kind}: none is stored in the control plane \
             or bundled, and the built-in interpreter has no rule for it",
            op.name()
        );
    }
    let aggregate = || async {
        let items = args
            .status
            .iter()
            .flatten()
            .map(|item| {
                serde_json::from_value::<AggregatedStatusItem>(item.clone())
                    .with_context(|| format!("fail to get status items: {item}"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        anyhow::Ok(interpreter.aggregate_object(object, &items).await?)
    };
    run_operation(interpreter, op, object, args, aggregate).await
}

/// The results of one operation on an object, named in karmadactl's order.
async fn run_operation<F, Fut>(
    interpreter: &ResourceInterpreter,
    op: Operation,
    object: &Value,
    args: &RuleArgs,
    aggregate: F,
) -> anyhow::Result<Vec<(&'static str, Value)>>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Value>>,
{
    Ok(match op {
        Operation::Retain => {
            let retained = interpreter.retain(object, args.observed()?).await?;
            vec![("retained", retained)]
        }
        Operation::InterpretReplica => {
            let (replica, requires) = interpreter.get_replicas(object).await?;
            vec![
                ("replica", Value::from(replica)),
                ("requires", serde_json::to_value(&requires)?),
            ]
        }
        Operation::InterpretComponent => {
            let components = interpreter.get_components(object).await?;
            vec![("components", serde_json::to_value(&components)?)]
        }
        Operation::ReviseReplica => {
            let revised = interpreter
                .revise_replica(object, i64::from(args.replica))
                .await?;
            vec![("revised", revised)]
        }
        Operation::InterpretStatus => {
            let status = interpreter.reflect_status(object).await?;
            vec![("status", status.unwrap_or(Value::Null))]
        }
        Operation::AggregateStatus => vec![("aggregatedStatus", aggregate().await?)],
        Operation::InterpretHealth => {
            let health = interpreter.interpret_health(object).await?;
            let healthy = health == karmada_api::work::v1alpha1::ResourceHealth::Healthy;
            vec![("healthy", Value::Bool(healthy))]
        }
        Operation::InterpretDependency => {
            let deps = interpreter.get_dependencies(object).await?;
            vec![("dependencies", serde_json::to_value(&deps)?)]
        }
    })
}

/// The interpreter of the control plane: the bundled customizations and the built-in
/// interpreter, under the ResourceInterpreterCustomizations stored in the control plane when
/// --kubeconfig names one.
async fn control_plane_interpreter(a: &InterpretArgs) -> anyhow::Result<ResourceInterpreter> {
    let interpreter = ResourceInterpreter::new(None, lua::Limits::default());
    let Some(kubeconfig) = &a.kubeconfig else {
        return Ok(interpreter);
    };
    let flags = crate::cmd::fleet::KarmadaFlags {
        kubeconfig: Some(kubeconfig.clone()),
        karmada_context: a.karmada_context.clone(),
    };
    let fleet = crate::cmd::fleet::Fleet::connect(&flags).await?;
    let resource = ApiResource {
        group: "config.karmada.io".into(),
        version: "v1alpha1".into(),
        api_version: "config.karmada.io/v1alpha1".into(),
        kind: "ResourceInterpreterCustomization".into(),
        plural: "resourceinterpretercustomizations".into(),
    };
    let list = Api::<DynamicObject>::all_with(fleet.client, &resource)
        .list(&ListParams::default())
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "listing the ResourceInterpreterCustomizations of the control plane: {}",
                crate::cmd::fleet::kube_message(&e)
            )
        })?;
    let stored = list
        .items
        .into_iter()
        .map(|o| {
            let name = o.metadata.name.clone().unwrap_or_default();
            serde_json::to_value(o)
                .and_then(serde_json::from_value::<ResourceInterpreterCustomization>)
                .with_context(|| format!("ResourceInterpreterCustomization {name}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    interpreter.load_customizations(&stored);
    Ok(interpreter)
}

/// `printExecuteResult`: each result as `---`, `# [i/n] name:` and its YAML.
fn print_results(results: &[(&str, Value)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, (name, value)) in results.iter().enumerate() {
        out.extend_from_slice(format!("---\n# [{}/{}] {name}:\n", i + 1, results.len()).as_bytes());
        out.extend_from_slice(&apimachinery::serializer::yaml::to_yaml(value));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::status_item;

    /// Each expectation is what Go's decoding into an AggregatedStatusItem and encoding back
    /// gives for the document.
    #[test]
    fn status_items_decode_as_go_decodes_them() {
        let cases = [
            (
                json!({"ClusterName": "m1", "extra": 1, "health": "Weird", "applied": null}),
                json!({"clusterName": "m1", "health": "Weird"}),
            ),
            (
                json!({"status": null, "applied": true}),
                json!({"clusterName": "", "applied": true}),
            ),
            (json!(null), json!({"clusterName": ""})),
            (
                json!({"CLUSTERNAME": "k", "status": "x", "appliedMessage": null}),
                json!({"clusterName": "k", "status": "x"}),
            ),
            // Go folds the long s to s.
            (
                json!({"clu\u{17f}terName": "long-s", "appliedMe\u{17f}\u{17f}age": "m"}),
                json!({"clusterName": "long-s", "appliedMessage": "m"}),
            ),
            (
                json!({"clustername": "folded", "clusterName": "exact"}),
                json!({"clusterName": "exact"}),
            ),
            (
                json!({"status": {"b": 1, "a": [1, null]}}),
                json!({"clusterName": "", "status": {"b": 1, "a": [1, null]}}),
            ),
        ];
        for (doc, want) in cases {
            assert_eq!(status_item(doc.clone()).expect("decodes"), want, "{doc}");
        }
        for (doc, message) in [
            (
                json!({"clusterName": 5}),
                "json: cannot unmarshal number into Go struct field AggregatedStatusItem.clusterName of type string",
            ),
            (
                json!({"applied": "yes"}),
                "json: cannot unmarshal string into Go struct field AggregatedStatusItem.applied of type bool",
            ),
            (
                json!("text"),
                "json: cannot unmarshal string into Go value of type v1alpha2.AggregatedStatusItem",
            ),
        ] {
            let err = status_item(doc.clone()).expect_err("refused");
            assert_eq!(err.to_string(), message, "{doc}");
        }
    }
}
