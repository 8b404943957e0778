//! FederatedResourceQuota's controllers (pkg/controllers/federatedresourcequota): [`sync`]
//! turns each static assignment into a ResourceQuota in that member (through a Work),
//! [`status`] gathers the members' quota usage, and [`enforcement`] (behind the
//! FederatedQuotaEnforcement gate) keeps `status.overallUsed` in step with the namespace's
//! scheduled bindings, which the scheduler checks before placing replicas ([`Ledger`]).

pub mod enforcement;
pub mod status;
pub mod sync;
pub mod usage;

mod admit;

pub use admit::{Ledger, QuotaExceeded};

use karmada_api::names;
use karmada_api::policy::v1alpha1::{
    FEDERATED_RESOURCE_QUOTA_NAME_LABEL, FEDERATED_RESOURCE_QUOTA_NAMESPACE_LABEL,
};

use crate::runtime::Key;
use crate::runtime::cache::CachedWork;

/// The Work that carries a quota's ResourceQuota to `cluster`.
fn work_key(cluster: &str, quota: &Key) -> Key {
    Key::new(
        names::execution_space_name(cluster),
        names::work_name("ResourceQuota", &quota.name, &quota.namespace),
    )
}

/// The quota a Work was made for, from its labels.
fn quota_of(w: &CachedWork) -> Option<Key> {
    Some(Key::new(
        w.labels.get(FEDERATED_RESOURCE_QUOTA_NAMESPACE_LABEL)?,
        w.labels.get(FEDERATED_RESOURCE_QUOTA_NAME_LABEL)?,
    ))
}
