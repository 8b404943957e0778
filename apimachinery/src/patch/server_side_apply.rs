//! Server-side apply and the managedFields bookkeeping of every other write, following
//! kube-apiserver's field manager chain (`NewDefaultFieldManager` in
//! `k8s.io/apimachinery/pkg/util/managedfields/internal/fieldmanager.go`): version check,
//! last-applied updater and manager, skip-non-applied, manager cap, manager info,
//! managedFields updater, meta stripping and the structured merge itself.

use jiff::Timestamp;
use serde_json::{Map, Value};
use tracing::warn;

use super::PatchError;
use super::error::Conflict;
use super::fieldpath::{PathElement, Set, path_string};
use super::managed_fields::{
    LAST_APPLIED_ANNOTATION, Managed, ManagedFieldsOperation, ManagerId, VersionedSet, is_reset,
};
use super::schema::{GroupVersionKindRef, Schema};
use super::typed::{Comparison, compare, drop_new_nulls, merge, remove_items, to_field_set};
use super::value::{go_json, json_eq};

/// Update managers kept before the oldest are folded into `ancient-changes`
/// (`DefaultMaxUpdateManagers`).
const MAX_UPDATE_MANAGERS: usize = 10;

/// The manager kube-apiserver gives the fields of an object that had no managedFields when it was
/// first applied to.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// What server-side apply needs besides the objects.
#[derive(Debug, Clone, Copy)]
pub struct ApplyOptions<'a> {
    /// `?fieldManager=`; required for apply (kube-apiserver answers 422 without it).
    pub manager: &'a str,
    /// `?force=true`: take ownership of conflicting fields instead of failing.
    pub force: bool,
    /// The `apiVersion` of the resource as served (`apps/v1`); the applied object must use it.
    pub api_version: &'a str,
    /// The kind; the applied object must use it.
    pub kind: &'a str,
    /// `Some("status")` when applying to a subresource.
    pub subresource: Option<&'a str>,
    /// Top-level fields whose changes are not tracked (`GetResetFields` of the strategy):
    /// `["status"]` on the main resource of a kind with a status subresource, `["spec"]` (and
    /// whatever else that endpoint resets) on `/status`.
    pub reset_fields: &'a [&'a str],
    /// The time recorded in the applier's entry.
    pub now: Timestamp,
}

/// What the managedFields bookkeeping of a non-apply write needs.
#[derive(Debug, Clone, Copy)]
pub struct UpdateOptions<'a> {
    /// The manager: `?fieldManager=` or [`default_field_manager`](super::default_field_manager)
    /// of the User-Agent; empty becomes `unknown`.
    pub manager: &'a str,
    /// The `apiVersion` of the resource as served.
    pub api_version: &'a str,
    /// `Some("status")` for writes to a subresource.
    pub subresource: Option<&'a str>,
    /// See [`ApplyOptions::reset_fields`].
    pub reset_fields: &'a [&'a str],
    /// The time recorded in the manager's entry.
    pub now: Timestamp,
}

impl UpdateOptions<'_> {
    /// The entry this write records its fields in.
    fn writer(&self) -> ManagerId {
        ManagerId::new(
            self.manager,
            ManagedFieldsOperation::Update,
            self.api_version,
            self.subresource,
        )
    }
}

/// Fields no manager owns (`stripMetaManager`).
/// The fields nobody owns (built once: every write subtracts it).
fn strip_set() -> &'static Set {
    static SET: std::sync::OnceLock<Set> = std::sync::OnceLock::new();
    SET.get_or_init(build_strip_set)
}

fn build_strip_set() -> Set {
    let mut set = Set::new();
    let f = |name: &str| PathElement::Field(name.to_string());
    set.insert(&[f("apiVersion")]);
    set.insert(&[f("kind")]);
    set.insert(&[f("metadata")]);
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[f("metadata"), f(name)]);
    }
    set
}

fn reset_set(reset_fields: &[&str]) -> Set {
    let mut set = Set::new();
    for field in reset_fields {
        set.insert(&[PathElement::Field((*field).to_string())]);
    }
    set
}

fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

fn managed_fields_of(obj: &Value) -> Option<&Value> {
    metadata(obj).and_then(|m| m.get("managedFields"))
}

fn without_managed_fields(obj: &Value) -> Value {
    let mut obj = obj.clone();
    set_managed_fields(&mut obj, None);
    obj
}

/// Replaces (or removes) `metadata.managedFields`.
fn set_managed_fields(obj: &mut Value, entries: Option<Value>) {
    let Value::Object(map) = obj else {
        return;
    };
    match entries {
        Some(entries) => {
            if let Value::Object(meta) = map
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()))
            {
                meta.insert("managedFields".to_string(), entries);
            }
        }
        None => {
            if let Some(Value::Object(meta)) = map.get_mut("metadata") {
                meta.remove("managedFields");
            }
        }
    }
}

/// Records a non-apply write (create, update, JSON/merge/strategic patch) in
/// `new.metadata.managedFields`: the fields it changed move to `manager`'s `Update` entry and out
/// of every other manager's set (`FieldManager.UpdateNoErrors`).
///
/// `old` is the stored object, `None` for a create. The managedFields in `new` win over the
/// stored ones when they decode and are not empty (a JSON patch rewriting them, as kubectl's
/// client-side-apply migration sends, is honoured); `[]` or `[{}]` clears them, after which
/// updates do not track fields until the next apply. Subresource writes always start from the
/// stored managedFields. This never fails: if the objects cannot be compared the stored
/// managedFields are kept.
pub fn update_managed_fields(
    schema: &Schema,
    old: Option<&Value>,
    new: &mut Value,
    opts: &UpdateOptions<'_>,
) {
    let live_entries = old.and_then(managed_fields_of);
    let new_entries = managed_fields_of(new);
    // The common write starts from the stored entries: a subresource write, or a client that
    // sent them back unchanged (or none).
    let from_live = opts.subresource.is_some()
        || (!is_reset(new_entries)
            && (matches!(new_entries, None | Some(Value::Null)) || new_entries == live_entries));
    if let (true, Some(old), Some(live)) = (from_live, old, live_entries) {
        // Without entries of its own, `new` starts from the stored ones on either path.
        set_managed_fields(new, None);
        if update_from_live(schema, old, live, new, opts) {
            return;
        }
    }
    let managed = decode_live_or_new(
        live_entries,
        managed_fields_of(new),
        opts.subresource.is_some(),
    );
    set_managed_fields(new, None);

    // skipNonAppliedManager: objects whose managedFields were cleared stay untracked until an
    // apply, except on create.
    if managed.is_empty() && old.is_some() {
        return;
    }

    let id = opts.writer();
    // The comparison skips metadata.managedFields, so the old object is used as stored.
    let old_value = old.unwrap_or(&*schema.zero);
    let mut managed = managed;
    match record_update(schema, old_value, new, &mut managed, id, opts) {
        Ok(()) => set_managed_fields(new, managed.encode()),
        Err(err) => {
            warn!(error = %err, "failed to update managedFields, keeping the stored ones");
            set_managed_fields(new, live_entries.cloned());
        }
    }
}

/// `decodeLiveOrNew`.
fn decode_live_or_new(live: Option<&Value>, new: Option<&Value>, subresource: bool) -> Managed {
    let decode_live = || Managed::decode(live).unwrap_or_default();
    if subresource {
        return decode_live();
    }
    if is_reset(new) {
        return Managed::default();
    }
    match Managed::decode(new) {
        Ok(managed) if !managed.is_empty() => managed,
        _ => decode_live(),
    }
}

/// [`update_managed_fields`] from the stored entries `live` (`new` has none), decoding only
/// the entries this write takes fields from and the writer's own (`Managed::decode_touching`):
/// a status write leaves the spec writer's big entry as it is. False when it cannot say (more
/// managers than are kept, objects that cannot be compared, entries that do not decode): the
/// general path then runs.
fn update_from_live(
    schema: &Schema,
    old: &Value,
    live: &Value,
    new: &mut Value,
    opts: &UpdateOptions<'_>,
) -> bool {
    // Below the cap even with a new entry for the writer, so no manager is folded.
    if live
        .as_array()
        .is_none_or(|e| e.len() >= MAX_UPDATE_MANAGERS)
    {
        return false;
    }
    let id = opts.writer();
    let reset = reset_set(opts.reset_fields);
    let Ok(comparison) = compare(schema, old, new) else {
        return false;
    };
    let comparison = comparison.exclude(&reset);
    let touched = comparison
        .modified
        .union(&comparison.added)
        .union(&comparison.removed);
    let Ok(mut managed) = Managed::decode_touching(Some(live), Some((&touched, &id))) else {
        return false;
    };
    if managed.is_empty() {
        // skipNonAppliedManager, as the general path.
        return true;
    }
    record_compared(&comparison, &reset, &mut managed, id, opts);
    set_managed_fields(new, managed.into_encoded());
    true
}

/// The structured-merge `Update` of one write, plus the manager bookkeeping around it.
pub(crate) fn record_update(
    schema: &Schema,
    old: &Value,
    new: &Value,
    managed: &mut Managed,
    id: ManagerId,
    opts: &UpdateOptions<'_>,
) -> Result<(), String> {
    let reset = reset_set(opts.reset_fields);
    let comparison = compare(schema, old, new)?.exclude(&reset);
    record_compared(&comparison, &reset, managed, id, opts);
    Ok(())
}

/// [`record_update`] once the objects are compared.
fn record_compared(
    comparison: &Comparison,
    reset: &Set,
    managed: &mut Managed,
    id: ManagerId,
    opts: &UpdateOptions<'_>,
) {
    let changed = comparison.modified.union(&comparison.added);
    // Every manager, the writer's own previous entry included, loses what this write changed
    // or removed (`Updater.Update` with the writer as "current-operation").
    take_ownership(managed, None, &changed, &comparison.removed);
    let current = changed.recursive_difference(reset).difference(strip_set());
    if !current.is_empty() {
        let set = match managed.fields.get(&id) {
            Some(previous) => current.union(&previous.set),
            None => current,
        };
        managed.fields.insert(
            id.clone(),
            VersionedSet {
                set,
                api_version: opts.api_version.to_string(),
            },
        );
        managed.times.insert(id, opts.now);
    }
    cap_update_managers(managed);
}

/// Removes `changed` and `removed` from every manager but `except`, dropping emptied managers.
fn take_ownership(managed: &mut Managed, except: Option<&ManagerId>, changed: &Set, removed: &Set) {
    for (id, vs) in managed.fields.iter_mut() {
        if Some(id) == except {
            continue;
        }
        vs.set = vs.set.difference(changed).difference(removed);
    }
    managed.fields.retain(|_, vs| !vs.set.is_empty());
}

/// Folds the oldest update managers into `ancient-changes` once there are more than ten
/// (`capManagersManager`).
fn cap_update_managers(managed: &mut Managed) {
    let mut updaters: Vec<ManagerId> = managed
        .fields
        .keys()
        .filter(|id| id.operation == ManagedFieldsOperation::Update)
        .cloned()
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by(|a, b| {
        let seconds = |id: &ManagerId| managed.times.get(id).map_or(0, |t| t.as_second());
        seconds(a)
            .cmp(&seconds(b))
            .then_with(|| a.identifier().cmp(&b.identifier()))
    });
    let mut first_of_version: std::collections::BTreeMap<String, ManagerId> = Default::default();
    let mut remaining = updaters.len();
    for id in updaters {
        if remaining <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(vs) = managed.fields.get(&id).cloned() else {
            continue;
        };
        let time = managed.times.get(&id).copied();
        let version = vs.api_version.clone();
        let Some(first) = first_of_version.get(&version).cloned() else {
            first_of_version.insert(version, id);
            continue;
        };
        let bucket = ManagerId::new(
            "ancient-changes",
            ManagedFieldsOperation::Update,
            &version,
            None,
        );
        if !managed.fields.contains_key(&bucket)
            && let Some(first_set) = managed.fields.remove(&first)
        {
            managed.fields.insert(bucket.clone(), first_set);
        }
        let merged = match managed.fields.get(&bucket) {
            Some(existing) => vs.set.union(&existing.set),
            None => vs.set.clone(),
        };
        managed.fields.insert(
            bucket.clone(),
            VersionedSet {
                set: merged,
                api_version: version,
            },
        );
        managed.fields.remove(&id);
        remaining -= 1;
        match time {
            Some(time) => {
                managed.times.insert(bucket, time);
            }
            None => {
                managed.times.remove(&bucket);
            }
        }
    }
}

/// Server-side apply (`application/apply-patch+yaml`, the body already decoded to JSON) of
/// `applied` by `opts.manager`.
///
/// Merges the applied configuration into `live` (`None` creates the object), makes the
/// manager's `Apply` entry exactly the fields it applied, removes fields it applied before but
/// no longer does (unless another manager owns them too), and moves ownership of changed fields
/// from other managers. Returns the object to store with its `metadata.managedFields`; when
/// nothing changed that is `live` with updated managedFields.
///
/// Errors: [`PatchError::Conflicts`] (409) when another manager owns a field whose value would
/// change and `force` is false; [`PatchError::BadRequest`] (400) for an applied object with the
/// wrong `apiVersion`/`kind` or with `metadata.managedFields`; [`PatchError::Internal`] (500)
/// for an applied object that does not fit the schema (duplicate list keys, list items without
/// keys).
///
/// Like kube-apiserver, for the manager `kubectl` conflicts with fields whose values still
/// match the `kubectl.kubernetes.io/last-applied-configuration` annotation are forced (the
/// client-side to server-side apply migration), and that annotation, if present, is rewritten to
/// the new configuration.
pub fn apply(
    schema: &Schema,
    live: Option<&Value>,
    applied: &Value,
    opts: &ApplyOptions<'_>,
) -> Result<Value, PatchError> {
    check_applied(applied, opts)?;

    let live_object = live.map_or_else(|| Value::Object(Map::new()), without_managed_fields);
    let mut managed = match Managed::decode(live.and_then(managed_fields_of)) {
        Ok(managed) => managed,
        Err(err) => {
            warn!(error = %err, "ignoring undecodable managedFields of the live object");
            Managed::default()
        }
    };

    // skipNonAppliedManager: an object without managedFields gets them for its existing fields,
    // owned by "before-first-apply", before the first apply.
    if managed.is_empty() && live.is_some() {
        let update = UpdateOptions {
            manager: BEFORE_FIRST_APPLY,
            api_version: opts.api_version,
            subresource: opts.subresource,
            reset_fields: opts.reset_fields,
            now: opts.now,
        };
        let id = ManagerId::new(
            BEFORE_FIRST_APPLY,
            ManagedFieldsOperation::Update,
            opts.api_version,
            opts.subresource,
        );
        record_update(
            schema,
            &schema.zero,
            &live_object,
            &mut managed,
            id,
            &update,
        )
        .map_err(PatchError::Internal)?;
    }

    let id = ManagerId::new(
        opts.manager,
        ManagedFieldsOperation::Apply,
        opts.api_version,
        opts.subresource,
    );
    let outcome = match structured_apply(
        schema,
        &live_object,
        applied,
        managed.clone(),
        &id,
        opts,
        opts.force,
    ) {
        Err(PatchError::Conflicts(conflicts)) if opts.manager == "kubectl" => {
            // lastAppliedManager: conflicts the last client-side apply explains are forced.
            match allowed_conflicts_from_last_applied(schema, &live_object, opts) {
                Some(allowed) => {
                    let remaining: Vec<Conflict> = conflicts
                        .into_iter()
                        .filter(|c| !allowed.iter().any(|a| a == &c.field))
                        .collect();
                    if remaining.is_empty() {
                        structured_apply(schema, &live_object, applied, managed, &id, opts, true)
                    } else {
                        Err(PatchError::Conflicts(remaining))
                    }
                }
                None => Err(PatchError::Conflicts(conflicts)),
            }
        }
        other => other,
    };
    let (mut object, managed) = outcome?;
    if !object.is_object() {
        object = Value::Object(Map::new());
    }
    drop_new_nulls(schema, &mut object, Some(&live_object));

    // lastAppliedUpdater: keep a client-side apply annotation in step with what was applied.
    if opts.manager == "kubectl" && has_last_applied(&object) {
        set_last_applied(&mut object, build_last_applied(applied));
    }
    set_managed_fields(&mut object, managed.encode());
    Ok(object)
}

/// The version check and the checks of the structured merge manager on the applied object.
fn check_applied(applied: &Value, opts: &ApplyOptions<'_>) -> Result<(), PatchError> {
    let Value::Object(map) = applied else {
        return Err(PatchError::BadRequest(
            "error decoding patch: the applied configuration must be an object".to_string(),
        ));
    };
    let api_version = map
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default();
    if api_version != opts.api_version || kind != opts.kind {
        return Err(PatchError::BadRequest(format!(
            "invalid object type: {}",
            GroupVersionKindRef::from_api_version(api_version, kind)
        )));
    }
    if managed_fields_of(applied).is_some_and(|m| !m.is_null()) {
        return Err(PatchError::BadRequest(
            "metadata.managedFields must be nil".to_string(),
        ));
    }
    Ok(())
}

/// `Updater.Apply` with the meta stripping and timestamps around it: returns the new object (the
/// live one when nothing changed) and the managers.
pub(crate) fn structured_apply(
    schema: &Schema,
    live: &Value,
    applied: &Value,
    mut managed: Managed,
    id: &ManagerId,
    opts: &ApplyOptions<'_>,
    force: bool,
) -> Result<(Value, Managed), PatchError> {
    let reset = reset_set(opts.reset_fields);
    let typed_error = |e: String| {
        PatchError::Internal(format!(
            "failed to create typed patch object ({}): {e}",
            GroupVersionKindRef::from_api_version(opts.api_version, opts.kind)
        ))
    };
    let merged = merge(schema, live, applied).map_err(typed_error)?;
    let applied_set = to_field_set(schema, applied)
        .map_err(typed_error)?
        .recursive_difference(&reset);
    let last_set = managed.fields.get(id).map(|vs| vs.set.clone());
    managed.fields.insert(
        id.clone(),
        VersionedSet {
            set: applied_set,
            api_version: opts.api_version.to_string(),
        },
    );
    let new = match last_set {
        Some(last) if !last.is_empty() => {
            prune(schema, &merged, &managed, &last).map_err(PatchError::Internal)?
        }
        _ => merged,
    };

    let comparison: Comparison = compare(schema, live, &new)
        .map_err(PatchError::Internal)?
        .exclude(&reset);
    let changed = comparison.modified.union(&comparison.added);
    let conflicts: Vec<Conflict> = managed
        .fields
        .iter()
        .filter(|(other, _)| *other != id)
        .flat_map(|(other, vs)| {
            vs.set
                .intersection(&changed)
                .paths()
                .into_iter()
                .map(move |path| Conflict {
                    manager: other.manager.clone(),
                    operation: other.operation,
                    api_version: vs.api_version.clone(),
                    subresource: (!other.subresource.is_empty()).then(|| other.subresource.clone()),
                    field: path_string(&path),
                })
        })
        .collect();
    if !force && !conflicts.is_empty() {
        return Err(PatchError::Conflicts(conflicts));
    }
    take_ownership(&mut managed, Some(id), &changed, &comparison.removed);
    if let Some(own) = managed.fields.get_mut(id) {
        own.set = own.set.difference(strip_set());
    }
    managed.fields.retain(|_, vs| !vs.set.is_empty());

    if json_eq(live, &new) {
        return Ok((live.clone(), managed));
    }
    managed.times.insert(id.clone(), opts.now);
    Ok((new, managed))
}

/// `Updater.prune`: removes what the applier applied last time but not now, unless another
/// manager (or the applier's new configuration) owns it.
fn prune(schema: &Schema, merged: &Value, managed: &Managed, last: &Set) -> Result<Value, String> {
    let named = |set: &Set| set.ensure_named_fields_are_members(schema, schema.root);
    let last = named(last);
    let pruned = remove_items(schema, merged, &last);

    // addBackOwnedItems
    let owned = managed
        .fields
        .values()
        .fold(Set::new(), |acc, vs| acc.union(&vs.set));
    let merged_set = named(&to_field_set(schema, merged)?);
    let pruned_set = named(&to_field_set(schema, &pruned)?);
    let pruned = remove_items(
        schema,
        merged,
        &merged_set.difference(&pruned_set.union(&named(&owned))),
    );

    // addBackDanglingItems
    let pruned_set = named(&to_field_set(schema, &pruned)?);
    Ok(remove_items(
        schema,
        merged,
        &merged_set.difference(&pruned_set).intersection(&last),
    ))
}

fn last_applied(obj: &Value) -> Option<&str> {
    metadata(obj)?
        .get("annotations")?
        .get(LAST_APPLIED_ANNOTATION)?
        .as_str()
}

fn has_last_applied(obj: &Value) -> bool {
    last_applied(obj).is_some_and(|s| !s.is_empty())
}

/// Fields of the last client-side applied configuration whose live values are unchanged
/// (`allowedConflictsFromLastApplied`); `None` when there is no usable annotation.
fn allowed_conflicts_from_last_applied(
    schema: &Schema,
    live: &Value,
    opts: &ApplyOptions<'_>,
) -> Option<Vec<String>> {
    let text = last_applied(live).filter(|s| !s.is_empty())?;
    let last: Value = serde_json::from_str(text).ok()?;
    if last.get("apiVersion").and_then(Value::as_str) != Some(opts.api_version) {
        return None;
    }
    let fields = to_field_set(schema, &last).ok()?;
    let comparison = compare(schema, &last, live).ok()?;
    let allowed = fields
        .difference(&comparison.modified)
        .difference(&comparison.added)
        .difference(&comparison.removed);
    Some(allowed.paths().iter().map(|p| path_string(p)).collect())
}

/// The annotation value for an applied configuration: itself without the annotation, encoded as
/// Go's JSON encoder does, with its trailing newline (`buildLastApplied`).
fn build_last_applied(applied: &Value) -> String {
    let mut applied = applied.clone();
    if let Some(Value::Object(annotations)) = applied
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
    let mut text = go_json(&applied);
    text.push('\n');
    text
}

fn set_last_applied(obj: &mut Value, value: String) {
    if let Some(Value::Object(annotations)) = obj
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        annotations.insert(LAST_APPLIED_ANNOTATION.to_string(), Value::String(value));
    }
}

#[cfg(test)]
mod tests;
