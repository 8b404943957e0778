//! `karmada-rs taint` and `cordon`/`uncordon` (karmadactl's pkg/karmadactl/taint and
//! pkg/karmadactl/cordon, with kubectl's taint parsing that Karmada lifts): a Cluster's
//! `spec.taints` changed by a JSON merge patch, with karmadactl's arguments, checks and output.

use anyhow::{Context, bail};
use clap::Args;
use kube::api::{Api, DynamicObject, Patch, PatchParams};

use crate::cmd::fleet::{Fleet, KarmadaFlags, aggregate};
use serde_json::{Value, json};

/// The taint `cordon` adds (Karmada's `TaintClusterUnscheduler`).
pub const UNSCHEDULABLE: &str = "cluster.karmada.io/unschedulable";

const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// One taint as the commands handle it (`timeAdded` kept from the Cluster's own).
#[derive(Clone, Debug, PartialEq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    /// `""` only in a removal by key.
    pub effect: String,
    time_added: Option<Value>,
}

impl Taint {
    fn new(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: value.into(),
            effect: effect.into(),
            time_added: None,
        }
    }

    fn from_json(v: &Value) -> Taint {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
        Taint {
            time_added: v.get("timeAdded").filter(|t| !t.is_null()).cloned(),
            ..Taint::new(s("key"), s("value"), s("effect"))
        }
    }

    fn to_json(&self) -> Value {
        let mut t = serde_json::Map::new();
        t.insert("key".into(), json!(self.key));
        if !self.value.is_empty() {
            t.insert("value".into(), json!(self.value));
        }
        t.insert("effect".into(), json!(self.effect));
        if let Some(at) = &self.time_added {
            t.insert("timeAdded".into(), at.clone());
        }
        Value::Object(t)
    }

    /// corev1.Taint.MatchTaint: the same key and effect.
    fn matches(&self, other: &Taint) -> bool {
        self.key == other.key && self.effect == other.effect
    }

    /// corev1.Taint.ToString.
    fn spec(&self) -> String {
        match (self.value.is_empty(), self.effect.is_empty()) {
            (true, true) => self.key.clone(),
            (true, false) => format!("{}:{}", self.key, self.effect),
            (false, true) => format!("{}={}:", self.key, self.value),
            (false, false) => format!("{}={}:{}", self.key, self.value, self.effect),
        }
    }
}

/// kubectl's parseTaint: `key[=value]:effect` or `key` (a removal by key).
fn parse_taint(spec: &str) -> anyhow::Result<Taint> {
    let parts: Vec<&str> = spec.split(':').collect();
    let (key, value, effect) = match parts.as_slice() {
        [key] => (*key, "", ""),
        [kv, effect] => {
            if !EFFECTS.contains(effect) {
                bail!("invalid taint effect: {effect}, unsupported taint effect");
            }
            let kv: Vec<&str> = kv.split('=').collect();
            match kv.as_slice() {
                [key] => (*key, "", *effect),
                [key, value] => {
                    let errs = karmada_api::validation::names::is_valid_label_value(value);
                    if !errs.is_empty() {
                        bail!("invalid taint spec: {spec}, {}", errs.join("; "));
                    }
                    (*key, *value, *effect)
                }
                _ => bail!("invalid taint spec: {spec}"),
            }
        }
        _ => bail!("invalid taint spec: {spec}"),
    };
    let errs = karmada_api::validation::names::is_qualified_name(key);
    if !errs.is_empty() {
        bail!("invalid taint spec: {spec}, {}", errs.join("; "));
    }
    Ok(Taint::new(key, value, effect))
}

/// kubectl's ParseTaints: the taints to add and to remove (a trailing `-`).
pub fn parse_taints(specs: &[String]) -> anyhow::Result<(Vec<Taint>, Vec<Taint>)> {
    let (mut add, mut remove) = (Vec::<Taint>::new(), Vec::new());
    for spec in specs {
        if let Some(s) = spec.strip_suffix('-') {
            let t = parse_taint(s)?;
            remove.push(Taint::new(&t.key, "", &t.effect));
            continue;
        }
        let t = parse_taint(spec)?;
        if t.effect.is_empty() {
            bail!("invalid taint spec: {spec}");
        }
        if add.iter().any(|a| a.matches(&t)) {
            bail!(
                "duplicated taints with the same key and effect: {{{} {} {} <nil>}}",
                t.key,
                t.value,
                t.effect
            );
        }
        add.push(t);
    }
    Ok((add, remove))
}

/// karmadactl's reorganizeTaints: the operation printed and the new taints, or the
/// removals that found nothing.
fn reorganize(
    old: &[Taint],
    overwrite: bool,
    add: &[Taint],
    remove: &[Taint],
) -> (&'static str, Vec<Taint>, Vec<String>) {
    let mut taints = add.to_vec();
    for o in old {
        match taints.iter_mut().find(|t| t.matches(o)) {
            // A taint re-added keeps when it was first added.
            Some(t) if t.time_added.is_none() && t.value == o.value => {
                t.time_added = o.time_added.clone()
            }
            Some(_) => {}
            None => taints.push(o.clone()),
        }
    }
    let added = old.len() != taints.len();
    let mut errors = Vec::new();
    let mut deleted = false;
    for r in remove {
        let before = taints.len();
        taints.retain(|t| {
            if r.effect.is_empty() {
                t.key != r.key
            } else {
                !r.matches(t)
            }
        });
        deleted = taints.len() != before;
        if !deleted {
            errors.push(format!("taint {:?} not found", r.spec()));
        }
    }
    let operation = if (added && deleted) || overwrite {
        "modified"
    } else if added {
        "tainted"
    } else {
        "untainted"
    };
    (operation, taints, errors)
}

/// The Cluster's taints.
async fn taints_of(clusters: &Api<DynamicObject>, name: &str) -> anyhow::Result<Vec<Taint>> {
    let cluster = clusters.get(name).await?;
    Ok(cluster
        .data
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .map(|ts| ts.iter().map(Taint::from_json).collect())
        .unwrap_or_default())
}

/// Replaces the Cluster's taints (a merge patch replaces the whole list, as karmadactl's).
async fn set_taints(
    clusters: &Api<DynamicObject>,
    name: &str,
    taints: &[Taint],
) -> anyhow::Result<()> {
    let list: Vec<Value> = taints.iter().map(Taint::to_json).collect();
    clusters
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": list}})),
        )
        .await?;
    Ok(())
}

/// `karmada-rs taint clusters NAME... KEY[=VALUE]:EFFECT[-]...` (as `karmadactl taint`).
#[derive(Args, Clone, Debug)]
pub struct TaintArgs {
    /// `clusters` (or `cluster`), the Cluster names, then the taint changes:
    /// `key=value:effect` adds, `key:effect-` removes one, `key-` removes all with the key.
    #[arg(required = true, num_args = 1..)]
    pub args: Vec<String>,
    /// If true, allow taints to be overwritten, otherwise reject taint updates that overwrite
    /// existing taints.
    #[arg(long, env = "KARMADA_RS_OVERWRITE")]
    pub overwrite: bool,
    /// Run the command in dry-run mode, without making any server requests.
    #[arg(long, env = "KARMADA_RS_DRY_RUN")]
    pub dry_run: bool,
    #[command(flatten)]
    pub karmada: KarmadaFlags,
}

/// karmadactl's parseTaintArgs: resources first, then taint changes.
fn split_args(args: &[String]) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let (mut resources, mut taints) = (Vec::new(), Vec::new());
    for s in args {
        let is_taint = s.contains('=') || s.contains(':') || s.ends_with('-');
        match (taints.is_empty(), is_taint) {
            (_, true) => taints.push(s.clone()),
            (true, false) => resources.push(s.clone()),
            (false, false) => bail!("all resources must be specified before taint changes: {s}"),
        }
    }
    Ok((resources, taints))
}

/// karmadactl's Complete and Validate.
fn taint_plan(args: &[String]) -> anyhow::Result<(Vec<String>, Vec<Taint>, Vec<Taint>)> {
    let (resources, specs) = split_args(args)?;
    if resources.is_empty() {
        bail!("one or more resources must be specified as <resource> <name>");
    }
    if specs.is_empty() {
        bail!("at least one taint update is required");
    }
    let (add, remove) = parse_taints(&specs)?;
    let kind = resources[0].to_lowercase();
    if kind != "cluster" && kind != "clusters" {
        bail!("invalid resource type {kind}, only [\"cluster\" \"clusters\"] are supported");
    }
    let conflicts: Vec<String> = remove
        .iter()
        .filter(|r| {
            add.iter()
                .any(|a| a.key == r.key && (r.effect.is_empty() || a.effect == r.effect))
        })
        .map(|r| format!("{{\"{}\":\"{}\"}}", r.key, r.effect))
        .collect();
    if !conflicts.is_empty() {
        bail!(
            "can not both modify and remove the following taint(s) in the same command: {}",
            conflicts.join(", ")
        );
    }
    if resources.len() < 2 {
        bail!("at least one resource name must be specified");
    }
    Ok((resources[1..].to_vec(), add, remove))
}

/// Runs `taint`.
pub async fn taint(args: TaintArgs) -> anyhow::Result<()> {
    let (names, add, remove) = taint_plan(&args.args)?;
    let clusters = Fleet::connect(&args.karmada).await?.clusters();
    for name in names {
        let old = taints_of(&clusters, &name).await?;
        if !args.overwrite {
            let existing: Vec<&str> = add
                .iter()
                .filter(|a| old.iter().any(|o| o.matches(a)))
                .map(|a| a.key.as_str())
                .collect();
            if !existing.is_empty() {
                bail!(
                    "cluster {name} already has {} taint(s) with same effect(s) and --overwrite is false",
                    existing.join(",")
                );
            }
        }
        let (operation, taints, errors) = reorganize(&old, args.overwrite, &add, &remove);
        if !errors.is_empty() {
            bail!(aggregate(&errors));
        }
        if !args.dry_run {
            set_taints(&clusters, &name, &taints)
                .await
                .with_context(|| format!("updating the taints of cluster {name}"))?;
        }
        println!("cluster/{name} {operation}");
    }
    Ok(())
}

/// `karmada-rs cordon|uncordon CLUSTER` (as karmadactl's).
#[derive(Args, Clone, Debug)]
pub struct CordonArgs {
    /// The Cluster.
    pub cluster: String,
    /// Run the command in dry-run mode, without making any server requests.
    #[arg(long, env = "KARMADA_RS_DRY_RUN")]
    pub dry_run: bool,
    #[command(flatten)]
    pub karmada: KarmadaFlags,
}

/// Runs `cordon` (`cordon` true) or `uncordon`.
pub async fn cordon(args: CordonArgs, cordon: bool) -> anyhow::Result<()> {
    let clusters = Fleet::connect(&args.karmada).await?.clusters();
    let name = &args.cluster;
    let mut taints = taints_of(&clusters, name).await?;
    let unschedulable = Taint::new(UNSCHEDULABLE, "", "NoSchedule");
    let at = taints.iter().position(|t| t.matches(&unschedulable));
    let word = if cordon { "cordon" } else { "uncordon" };
    match (cordon, at) {
        (true, Some(_)) | (false, None) => {
            println!("{name} cluster already {word}ed");
            return Ok(());
        }
        (true, None) => taints.push(unschedulable),
        // karmadactl moves the last taint into the removed one's place.
        (false, Some(i)) => {
            taints.swap_remove(i);
        }
    }
    if !args.dry_run {
        set_taints(&clusters, name, &taints).await?;
    }
    println!("{name} cluster {word}ed");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn taints_parse_as_kubectl_parses_them() {
        let (add, remove) = parse_taints(&strings(&[
            "dedicated=special-user:NoSchedule",
            "bar:NoExecute",
            "gone-",
            "old:NoSchedule-",
        ]))
        .expect("valid");
        assert_eq!(
            add,
            [
                Taint::new("dedicated", "special-user", "NoSchedule"),
                Taint::new("bar", "", "NoExecute")
            ]
        );
        assert_eq!(
            remove,
            [
                Taint::new("gone", "", ""),
                Taint::new("old", "", "NoSchedule")
            ]
        );
        let err = |s: &str| parse_taints(&strings(&[s])).expect_err(s).to_string();
        assert_eq!(
            err("a=b:Sometimes"),
            "invalid taint effect: Sometimes, unsupported taint effect"
        );
        // Without an effect the whole of it is the key.
        assert!(err("a=b").starts_with("invalid taint spec: a=b, name part must consist"));
        assert_eq!(
            parse_taints(&strings(&["a"]))
                .expect_err("no effect")
                .to_string(),
            "invalid taint spec: a"
        );
        assert_eq!(
            err("a=b=c:NoSchedule"),
            "invalid taint spec: a=b=c:NoSchedule"
        );
        assert!(err("-a:NoSchedule").starts_with(
            "invalid taint spec: -a:NoSchedule, name part must consist of alphanumeric characters"
        ));
        assert_eq!(
            parse_taints(&strings(&["a=1:NoSchedule", "a=2:NoSchedule"]))
                .expect_err("duplicate")
                .to_string(),
            "duplicated taints with the same key and effect: {a 2 NoSchedule <nil>}"
        );
    }

    #[test]
    fn arguments_are_checked_as_karmadactl_checks_them() {
        let err = |a: &[&str]| taint_plan(&strings(a)).expect_err("refused").to_string();
        assert_eq!(
            err(&["a:NoSchedule"]),
            "one or more resources must be specified as <resource> <name>"
        );
        assert_eq!(
            err(&["clusters", "m1"]),
            "at least one taint update is required"
        );
        assert_eq!(
            err(&["nodes", "n1", "a:NoSchedule"]),
            "invalid resource type nodes, only [\"cluster\" \"clusters\"] are supported"
        );
        assert_eq!(
            err(&["clusters", "a:NoSchedule"]),
            "at least one resource name must be specified"
        );
        assert_eq!(
            err(&["clusters", "m1", "a:NoSchedule", "m2"]),
            "all resources must be specified before taint changes: m2"
        );
        assert_eq!(
            err(&["clusters", "m1", "a=1:NoSchedule", "a-"]),
            "can not both modify and remove the following taint(s) in the same command: {\"a\":\"\"}"
        );
        let (names, add, _) =
            taint_plan(&strings(&["Cluster", "m1", "m2", "a:NoSchedule"])).expect("valid");
        assert_eq!(names, ["m1", "m2"]);
        assert_eq!(add.len(), 1);
    }

    #[test]
    fn taints_are_reorganized_as_karmadactl_does() {
        let old = vec![
            Taint::new("a", "1", "NoSchedule"),
            Taint::new("b", "", "NoExecute"),
        ];
        let (op, taints, errors) =
            reorganize(&old, false, &[Taint::new("c", "", "NoSchedule")], &[]);
        assert_eq!((op, errors.len()), ("tainted", 0));
        assert_eq!(
            taints.iter().map(Taint::spec).collect::<Vec<_>>(),
            ["c:NoSchedule", "a=1:NoSchedule", "b:NoExecute"]
        );
        let (op, taints, _) = reorganize(&old, false, &[], &[Taint::new("a", "", "")]);
        assert_eq!(op, "untainted");
        assert_eq!(
            taints.iter().map(Taint::spec).collect::<Vec<_>>(),
            ["b:NoExecute"]
        );
        let (op, taints, _) = reorganize(&old, true, &[Taint::new("a", "2", "NoSchedule")], &[]);
        assert_eq!(op, "modified");
        assert_eq!(
            taints.iter().map(Taint::spec).collect::<Vec<_>>(),
            ["a=2:NoSchedule", "b:NoExecute"]
        );
        let (_, _, errors) = reorganize(&old, false, &[], &[Taint::new("z", "", "NoSchedule")]);
        assert_eq!(errors, ["taint \"z:NoSchedule\" not found"]);
    }
}
