//! `karmada-rs migrate check`: what this server would make of an etcd written by a Karmada
//! control plane (kube-apiserver, karmada-aggregated-apiserver) or by an earlier version of
//! itself, read-only. Every key under the etcd prefix is decrypted and decoded as the server
//! would at start and counted per resource: served, not served but left as it is (kube's own
//! bookkeeping), cannot be served (with why: undecodable, unreadable encryption, a resource
//! nothing here serves, Karmada's own webhook configuration, which would call the stopped
//! karmada-webhook),
//! rewritten by its next update (another encoding than this server writes, a key that no
//! longer writes), and moved to kube's keys at start.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::Bytes;
use prost::Message;
use serde_json::Value;
use storage::{KeyValue, RangeRequest, Store};

use crate::resources::{ROOT, ResourceDef, StorageKeys, built_in};
use crate::storage_codec;

/// Keys read per request.
const PAGE: usize = 1000;
/// Keys named per resource in the report's list of objects that cannot be served.
const LISTED: usize = 20;

/// Why an object under an earlier key is not served when its current key holds another.
const SHADOWED: &str = "also stored under its current key with another value: that one is served, this one is left as it is";

/// The report's columns, in the order of its counts.
const COLUMNS: [&str; 5] = [
    "SERVED",
    "REWRITE",
    "MOVE",
    "NOT-SERVED",
    "CANNOT-BE-SERVED",
];

/// What `migrate check` found.
#[derive(Debug, Default)]
pub struct Report {
    /// The etcd prefix read (`/registry/`).
    pub root: String,
    /// How many keys it holds.
    pub keys: usize,
    /// Objects served, per resource (`deployments.apps`).
    pub served: BTreeMap<String, usize>,
    /// Objects not served but left in etcd as they are, per resource, and why.
    pub kept: BTreeMap<String, (usize, String)>,
    /// Objects that cannot be served, per resource: keys and why.
    pub unservable: BTreeMap<String, Vec<(String, String)>>,
    /// Objects an update would rewrite even when nothing changed, per resource, and why.
    pub rewritten: BTreeMap<String, (usize, String)>,
    /// Objects moved to kube's keys at start, per resource.
    pub moved: BTreeMap<String, usize>,
}

impl Report {
    /// Whether every object can be served. An empty prefix fails too: it is a wrong
    /// `--etcd-prefix` or etcd far more often than a control plane with nothing in it.
    pub fn ok(&self) -> bool {
        self.keys > 0 && self.unservable.is_empty()
    }

    /// The report as a person reads it.
    pub fn render(&self) -> String {
        if self.keys == 0 {
            return format!(
                "No keys under {}: is this the control plane's etcd, and --etcd-prefix its kube-apiserver's?\n",
                self.root
            );
        }
        let mut resources: BTreeSet<&String> = BTreeSet::new();
        resources.extend(self.served.keys());
        resources.extend(self.kept.keys());
        resources.extend(self.unservable.keys());
        let width = resources.iter().map(|r| r.len()).max().unwrap_or(8).max(8);
        let mut out = format!("{:width$}", "RESOURCE");
        for h in COLUMNS {
            out.push_str(&format!("  {h:>7}"));
        }
        out.push('\n');
        for r in &resources {
            let counts = [
                self.served.get(*r).copied().unwrap_or(0),
                self.rewritten.get(*r).map_or(0, |(n, _)| *n),
                self.moved.get(*r).copied().unwrap_or(0),
                self.kept.get(*r).map_or(0, |(n, _)| *n),
                self.unservable.get(*r).map_or(0, Vec::len),
            ];
            out.push_str(&format!("{r:width$}"));
            for (h, n) in COLUMNS.iter().zip(counts) {
                out.push_str(&format!("  {n:>w$}", w = h.len().max(7)));
            }
            out.push('\n');
        }
        counted_section(
            &mut out,
            "Rewritten by their next update (or `karmada-rs storage rewrite --resource RESOURCE`)",
            &self.rewritten,
        );
        let moved: BTreeMap<String, (usize, String)> = self
            .moved
            .iter()
            .map(|(r, n)| (r.clone(), (*n, String::new())))
            .collect();
        counted_section(&mut out, "Moved to kube-apiserver's keys at start", &moved);
        counted_section(&mut out, "Not served, left in etcd as they are", &self.kept);
        if !self.unservable.is_empty() {
            out.push_str("\nCannot be served:\n");
            for (r, items) in &self.unservable {
                out.push_str(&format!("  {r}: {}\n", items.len()));
                for (key, why) in items.iter().take(LISTED) {
                    out.push_str(&format!("    {key}: {why}\n"));
                }
                if items.len() > LISTED {
                    out.push_str(&format!("    ... and {} more\n", items.len() - LISTED));
                }
            }
        }
        out
    }
}

/// A titled list of resources with a count and, when there is one, why.
fn counted_section(out: &mut String, title: &str, counts: &BTreeMap<String, (usize, String)>) {
    if counts.is_empty() {
        return;
    }
    out.push_str(&format!("\n{title}:\n"));
    for (r, (n, why)) in counts {
        if why.is_empty() {
            out.push_str(&format!("  {r}: {n}\n"));
        } else {
            out.push_str(&format!("  {r}: {n} ({why})\n"));
        }
    }
}

/// Reads every key of `store` (the backend, its keys under `etcd_prefix`), decrypting with
/// `encryption` when given.
pub async fn check(
    store: Arc<dyn Store>,
    etcd_prefix: &str,
    encryption: Option<Arc<encryption::Encryption>>,
) -> Result<Report, storage::Error> {
    // Karmada's older served versions are read through their conversion.
    crate::karmada::install();
    let root = format!(
        "{}/",
        storage::prefixed::normalize(etcd_prefix).trim_end_matches('/')
    );
    let keys = StorageKeys::with_etcd_prefix(etcd_prefix);
    let plain = |kv: &KeyValue| -> Result<(Bytes, bool), String> {
        let Some(e) = &encryption else {
            return Ok((kv.value.clone(), false));
        };
        let Some((group, resource)) = keys.group_resource(&kv.key) else {
            return Ok((kv.value.clone(), false));
        };
        let out = e
            .transformer(group, resource)
            .transform_from_storage(&kv.key, &kv.value)?;
        Ok((out.value.unwrap_or_else(|| kv.value.clone()), out.stale))
    };
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let resp = store
            .range(RangeRequest {
                prefix: root.clone(),
                start_after: after.take(),
                limit: PAGE,
                revision: 0,
            })
            .await?;
        after = resp.kvs.last().map(|kv| kv.key.clone());
        all.extend(resp.kvs);
        if !resp.more {
            break;
        }
    }
    // Keys as the server names them, under `/registry/`.
    let logical = |key: &str| format!("{ROOT}{}", &key[root.len()..]);

    let mut defs: Vec<ResourceDef> = built_in()
        .into_iter()
        .chain(crate::karmada::resources())
        .collect();
    let native: Vec<Arc<ResourceDef>> = defs.iter().cloned().map(Arc::new).collect();
    let crds = defs
        .iter()
        .find(|d| d.group == "apiextensions.k8s.io" && d.plural == "customresourcedefinitions")
        .cloned();
    if let Some(crds) = &crds {
        let prefix = crds.prefix().unwrap_or_default().to_string();
        for kv in all
            .iter()
            .filter(|kv| logical(&kv.key).starts_with(&prefix))
        {
            let Ok((value, _)) = plain(kv) else { continue };
            let Ok(crd) = storage_codec::decode_value(crds, &value, kv.mod_revision) else {
                continue;
            };
            // A CRD of a kind this server serves itself (Karmada's) does not define it here.
            if !crate::crd::definition::mirrors_native(&crd, &native) {
                defs.extend(crate::crd::definition::resource_defs(&crd));
            }
        }
    }

    let mut report = Report {
        keys: all.len(),
        root: root.clone(),
        ..Report::default()
    };
    // Objects under earlier keys: moved at start when their current key is free; when it
    // holds the same object, the earlier copy is dropped; when it holds another, the current
    // one is served and the earlier one left unserved.
    let by_key: BTreeMap<String, &KeyValue> = all.iter().map(|kv| (logical(&kv.key), kv)).collect();
    let decrypted = |kv: Option<&&KeyValue>| kv.and_then(|kv| plain(kv).ok()).map(|(v, _)| v);
    let mut legacy = BTreeSet::new();
    let mut settled = BTreeSet::new();
    for o in crate::storage_layout::legacy_objects(
        &*storage::prefixed::PrefixedStore::wrap(store.clone(), ROOT, etcd_prefix),
        &built_in(),
    )
    .await?
    {
        let current = by_key.get(&o.to);
        if current.is_some() {
            settled.insert(o.kv.key.clone());
            let old = by_key.get(&o.kv.key);
            if decrypted(current).is_none() || decrypted(current) != decrypted(old) {
                let raw_key = old.map_or(o.kv.key.clone(), |kv| kv.key.clone());
                report
                    .unservable
                    .entry(o.resource)
                    .or_default()
                    .push((raw_key, SHADOWED.into()));
                continue;
            }
        } else {
            legacy.insert(o.kv.key);
        }
        *report.moved.entry(o.resource).or_insert(0) += 1;
    }

    for kv in &all {
        let key = logical(&kv.key);
        if settled.contains(&key) {
            continue;
        }
        let def = if legacy.contains(&key) {
            defs.iter().find(|d| {
                d.prefix().is_some()
                    && key.starts_with(&crate::resources::legacy_storage_prefix(
                        &d.group, &d.plural,
                    ))
            })
        } else {
            owner_of(&defs, &key)
        };
        let Some(def) = def else {
            let resource = unserved_resource(&keys, &kv.key, &key);
            match not_served(&resource, &key) {
                Ok(why) => {
                    let e = report.kept.entry(resource).or_insert((0, why));
                    e.0 += 1;
                }
                Err(why) => report
                    .unservable
                    .entry(resource)
                    .or_default()
                    .push((kv.key.clone(), why)),
            }
            continue;
        };
        let resource = def.qualified();
        let (value, stale_key) = match plain(kv) {
            Ok(v) => v,
            Err(why) => {
                report
                    .unservable
                    .entry(resource)
                    .or_default()
                    .push((kv.key.clone(), format!("unable to decrypt: {why}")));
                continue;
            }
        };
        match storage_codec::decode_value(def, &value, kv.mod_revision) {
            Ok(_)
                if is_webhook_configuration(&resource) && karmadas_webhooks(&resource, &value) =>
            {
                report
                    .unservable
                    .entry(resource)
                    .or_default()
                    .push((kv.key.clone(), karmada_webhook_blocker(def, &value)));
                continue;
            }
            Ok(_) => *report.served.entry(resource.clone()).or_insert(0) += 1,
            Err(e) => {
                report
                    .unservable
                    .entry(resource)
                    .or_default()
                    // The reason, without the 500's wording.
                    .push((
                        kv.key.clone(),
                        e.message
                            .trim_start_matches("Internal error occurred: ")
                            .to_string(),
                    ));
                continue;
            }
        }
        let why = if stale_key {
            Some("encrypted with a key that no longer writes".to_string())
        } else if storage_codec::is_stale(def, &value) {
            Some(match storage_codec::Encoding::of(def) {
                storage_codec::Encoding::Protobuf(_) => {
                    "stored as JSON, written as protobuf".into()
                }
                storage_codec::Encoding::Typed(_) => {
                    "stored in apiextensions.k8s.io/v1, written in v1beta1".into()
                }
                storage_codec::Encoding::Unstructured => {
                    "stored as protobuf, written as JSON".into()
                }
            })
        } else {
            None
        };
        if let Some(why) = why {
            report.rewritten.entry(resource).or_insert((0, why)).0 += 1;
        }
    }
    Ok(report)
}

/// The served resource a key belongs to: the longest prefix whose rest is a name (and a
/// namespace, for namespaced resources).
fn owner_of<'d>(defs: &'d [ResourceDef], key: &str) -> Option<&'d ResourceDef> {
    defs.iter()
        .filter_map(|d| {
            let prefix = d.prefix()?;
            let rest = key.strip_prefix(prefix)?;
            let segments = if d.namespaced { 2 } else { 1 };
            (rest.split('/').count() == segments && !rest.split('/').any(str::is_empty))
                .then_some((prefix.len(), d))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, d)| d)
}

/// The metadata of a stored kube object (protobuf, any kind: `metadata` is every object's
/// first field) or JSON.
#[derive(Clone, PartialEq, Message)]
struct WithMetadata {
    #[prost(message, optional, tag = "1")]
    metadata: Option<k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
}

fn raw_message(value: &[u8]) -> Option<Vec<u8>> {
    let body = value.strip_prefix(apimachinery::protobuf::MAGIC.as_slice())?;
    k8s_pb::apimachinery::pkg::runtime::Unknown::decode(body)
        .ok()?
        .raw
}

fn metadata(value: &[u8]) -> Option<k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta> {
    match raw_message(value) {
        Some(raw) => WithMetadata::decode(&raw[..]).ok()?.metadata,
        None => {
            let v: Value = serde_json::from_slice(value).ok()?;
            let m = v.get("metadata")?;
            Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: m.get("name").and_then(Value::as_str).map(str::to_string),
                annotations: m
                    .get("annotations")
                    .and_then(Value::as_object)
                    .map(|a| {
                        a.iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                            .collect()
                    })
                    .unwrap_or_default(),
                ..Default::default()
            })
        }
    }
}

/// How a key of a resource this server does not serve is reported: kube-apiserver's own
/// bookkeeping by its prefix, the rest by group and resource.
fn unserved_resource(keys: &StorageKeys, key: &str, logical: &str) -> String {
    for own in ["masterleases", "ranges"] {
        if logical.starts_with(&format!("{ROOT}{own}/")) {
            return own.into();
        }
    }
    let (group, resource) = keys.group_resource(key).unwrap_or(("", ""));
    kube_registry::resources::qualified_resource(group, resource)
}

/// Why an object of a resource this server does not serve can be left as it is (`Ok`), or
/// why losing it matters (`Err`).
fn not_served(resource: &str, key: &str) -> Result<String, String> {
    match resource {
        "masterleases" | "ranges" => {
            Ok("kube-apiserver's own bookkeeping, not an API resource".into())
        }
        "endpointslices.discovery.k8s.io" if key.ends_with("/default/kubernetes") => {
            Ok("kube-apiserver's own endpoints".into())
        }
        _ => {
            // A group with a dot that is not Kubernetes' is a custom resource's.
            let group = resource.split_once('.').map_or("", |(_, g)| g);
            if group.contains('.') && !group.ends_with(".k8s.io") {
                Err("no CustomResourceDefinition defines this resource".into())
            } else {
                Err(format!("{resource} is not served by karmada-rs"))
            }
        }
    }
}

fn is_webhook_configuration(resource: &str) -> bool {
    matches!(
        resource,
        "mutatingwebhookconfigurations.admissionregistration.k8s.io"
            | "validatingwebhookconfigurations.admissionregistration.k8s.io"
    )
}

/// Why Karmada's own webhook configuration stops a takeover: served here, its webhooks would
/// be called, and karmada-webhook, which answers them, is stopped with the rest of Karmada
/// (its `Fail` policy would then refuse every write of Karmada's kinds). karmada-rs defaults
/// and validates those kinds itself, so the configuration is deleted instead.
fn karmada_webhook_blocker(def: &ResourceDef, value: &[u8]) -> String {
    let name = metadata(value).and_then(|m| m.name).unwrap_or_default();
    format!(
        "{name}: Karmada's webhooks, answered by karmada-webhook, which stops with Karmada; karmada-rs defaults and validates Karmada's kinds itself: delete it before the takeover (kubectl delete {} {name})",
        def.kind.to_lowercase()
    )
}

/// Whether every webhook of a stored webhook configuration is Karmada's own (named
/// `*.karmada.io`, served by karmada-webhook), as Karmada's installers create them.
fn karmadas_webhooks(resource: &str, value: &[u8]) -> bool {
    use k8s_pb::api::admissionregistration::v1 as admission;
    let Some(raw) = raw_message(value) else {
        return false;
    };
    let clients: Vec<(Option<String>, Option<admission::WebhookClientConfig>)> =
        if resource.starts_with("mutating") {
            match admission::MutatingWebhookConfiguration::decode(&raw[..]) {
                Ok(c) => c
                    .webhooks
                    .into_iter()
                    .map(|w| (w.name, w.client_config))
                    .collect(),
                Err(_) => return false,
            }
        } else {
            match admission::ValidatingWebhookConfiguration::decode(&raw[..]) {
                Ok(c) => c
                    .webhooks
                    .into_iter()
                    .map(|w| (w.name, w.client_config))
                    .collect(),
                Err(_) => return false,
            }
        };
    !clients.is_empty()
        && clients.iter().all(|(name, client)| {
            let karmada_name = name.as_deref().is_some_and(|n| n.ends_with(".karmada.io"));
            let karmada_webhook = client.as_ref().is_some_and(|c| {
                c.url.as_deref().is_some_and(|u| {
                    u.trim_start_matches("https://")
                        .starts_with("karmada-webhook.")
                }) || c.service.as_ref().is_some_and(|s| {
                    s.name
                        .as_deref()
                        .is_some_and(|n| n.ends_with("karmada-webhook"))
                })
            });
            karmada_name && karmada_webhook
        })
}
