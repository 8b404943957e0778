//! The server's authorizer as CEL's `authorizer` variable asks it (kube hands the
//! apiserver's own authorizer to the ValidatingAdmissionPolicy plugin, k8s.io/apiserver
//! pkg/admission/plugin/policy/validating/plugin.go `SetAuthorizer`): the checks a policy
//! makes are decided by the same RBAC, `system:masters` included, as the requests themselves.

use std::sync::Arc;

use admission_policy::{AuthorizationAttributes, AuthorizationDecision, Verdict};
use genericapiserver::auth::attributes::Attributes;
use genericapiserver::auth::{Authorizer, UserInfo};

/// RBAC behind the policy engine's authorizer interface.
pub struct ServerAuthorizer(pub Arc<Authorizer>);

impl admission_policy::Authorizer for ServerAuthorizer {
    fn authorize(&self, a: &AuthorizationAttributes) -> AuthorizationDecision {
        let user = UserInfo {
            name: a.user.username.clone(),
            uid: a.user.uid.clone(),
            groups: a.user.groups.clone(),
            extra: a.user.extra.clone(),
        };
        let decision = self.0.authorize(&Attributes {
            user: &user,
            verb: &a.verb,
            resource_request: a.resource_request,
            path: &a.path,
            api_group: &a.api_group,
            api_version: &a.api_version,
            resource: &a.resource,
            subresource: &a.subresource,
            namespace: &a.namespace,
            name: &a.name,
        });
        // RBAC allows or has no opinion; it never denies outright.
        AuthorizationDecision {
            verdict: if decision.allowed {
                Verdict::Allow
            } else {
                Verdict::NoOpinion
            },
            reason: decision.reason,
            error: None,
        }
    }
}
