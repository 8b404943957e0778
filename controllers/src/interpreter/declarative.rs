//! ResourceInterpreterCustomizations indexed by target kind (Karmada's declarative
//! `configmanager`): the customizations of a kind are merged in name order, the first
//! non-empty script of an operation wins, and dependency scripts add up.
//!
//! Each script is a [`lua::Script`], compiled once per Lua state; a reload keeps the scripts
//! whose text did not change, so their compiled forms stay cached, and replaces the others, so
//! a changed customization takes effect at its next call.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use karmada_api::config::v1alpha1::ResourceInterpreterCustomization;
use lua::Operation;

/// A script and where it came from, for messages.
#[derive(Clone, Debug)]
pub struct ScriptRef {
    /// The compiled script.
    pub script: lua::Script,
    /// Who defined it, e.g. `ResourceInterpreterCustomization(workloads)`.
    pub origin: String,
}

/// The scripts of one kind.
#[derive(Debug, Default)]
pub struct Accessor {
    scripts: HashMap<Operation, ScriptRef>,
    dependencies: Vec<ScriptRef>,
}

impl Accessor {
    /// The script of an operation (dependency interpretation excepted).
    pub fn script(&self, op: Operation) -> Option<&ScriptRef> {
        self.scripts.get(&op)
    }

    /// Every dependency interpretation script, in name order.
    pub fn dependency_scripts(&self) -> &[ScriptRef] {
        &self.dependencies
    }

    /// Whether the kind scripts an operation (`HookEnabled`).
    pub fn enabled(&self, op: Operation) -> bool {
        if op == Operation::InterpretDependency {
            !self.dependencies.is_empty()
        } else {
            self.scripts.contains_key(&op)
        }
    }
}

type Index = HashMap<(String, String), Arc<Accessor>>;

/// Customizations by target apiVersion and kind, replaced whole on every change.
#[derive(Default)]
pub struct Customizations {
    index: RwLock<Arc<Index>>,
}

impl Customizations {
    /// Replaces the customizations (`LoadConfig`). `origin` names where each came from.
    pub fn load(
        &self,
        items: &[ResourceInterpreterCustomization],
        origin: impl Fn(&ResourceInterpreterCustomization) -> String,
    ) {
        let previous = self.snapshot();
        // Scripts already compiled, by function and text.
        let mut known: HashMap<(&str, &str), &lua::Script> = HashMap::new();
        for a in previous.values() {
            for s in a.scripts.values().chain(a.dependencies.iter()) {
                known.insert((s.script.function(), s.script.source()), &s.script);
            }
        }
        let script_for = |op: Operation, source: &str| -> lua::Script {
            known
                .get(&(op.function(), source))
                .map(|s| (*s).clone())
                .unwrap_or_else(|| lua::Script::new(source, op.function()))
        };
        let mut sorted: Vec<&ResourceInterpreterCustomization> = items.iter().collect();
        sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut building: HashMap<(String, String), Accessor> = HashMap::new();
        for c in sorted {
            let target = &c.spec.target;
            let accessor = building
                .entry((target.api_version.clone(), target.kind.clone()))
                .or_default();
            for op in Operation::ALL {
                let Some(source) = c.spec.customizations.script(op) else {
                    continue;
                };
                let entry = ScriptRef {
                    script: script_for(op, source),
                    origin: origin(c),
                };
                if op == Operation::InterpretDependency {
                    accessor.dependencies.push(entry);
                } else {
                    accessor.scripts.entry(op).or_insert(entry);
                }
            }
        }
        let index: Index = building
            .into_iter()
            .map(|(k, v)| (k, Arc::new(v)))
            .collect();
        *self.index.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(index);
    }

    fn snapshot(&self) -> Arc<Index> {
        self.index.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The scripts of a kind, if any customization targets it.
    pub fn accessor(&self, api_version: &str, kind: &str) -> Option<Arc<Accessor>> {
        self.snapshot()
            .get(&(api_version.to_owned(), kind.to_owned()))
            .cloned()
    }

    /// Whether a kind scripts an operation.
    pub fn enabled(&self, api_version: &str, kind: &str, op: Operation) -> bool {
        self.accessor(api_version, kind)
            .is_some_and(|a| a.enabled(op))
    }

    /// The targets with at least one customization.
    pub fn targets(&self) -> Vec<(String, String)> {
        let mut t: Vec<_> = self.snapshot().keys().cloned().collect();
        t.sort();
        t
    }
}
