//! Authorization: kube-apiserver's `system:masters` short-circuit, then RBAC (Role,
//! ClusterRole, RoleBinding, ClusterRoleBinding) over an indexed view of the RBAC objects.

pub mod aggregation;
pub mod escalation;
pub mod index;
pub mod rule;

use std::sync::{Arc, RwLock};

pub use index::{Decision, Index, RulesFor};
pub use rule::PolicyRule;

use super::UserInfo;
use super::attributes::Attributes;

/// The API group of RBAC objects.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Decides requests. Cheap to share; the index behind it is swapped whole when RBAC objects
/// change, and a decision never waits on a rebuild.
#[derive(Debug, Default)]
pub struct Authorizer {
    index: RwLock<Arc<Index>>,
}

impl Authorizer {
    /// An authorizer with no RBAC objects (only `system:masters` is allowed anything).
    pub fn new() -> Authorizer {
        Authorizer::default()
    }

    /// Replaces the index.
    pub fn set_index(&self, index: Index) {
        let mut guard = self.index.write().unwrap_or_else(|p| p.into_inner());
        *guard = Arc::new(index);
    }

    /// The current index.
    pub fn index(&self) -> Arc<Index> {
        self.index.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Decides one request: `system:masters` is always allowed (kube's privileged-group
    /// authorizer runs first), everyone else gets what RBAC grants.
    pub fn authorize(&self, a: &Attributes) -> Decision {
        if a.user.is_master() {
            return Decision::allow("");
        }
        self.index().authorize(a)
    }

    /// The rules that apply to `user` in `namespace`.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesFor {
        self.index().rules_for(user, namespace)
    }
}
