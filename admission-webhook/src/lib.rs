//! Dynamic admission (k8s.io/apiserver pkg/admission/plugin/webhook and policy/validating):
//! the MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins, which call the webhooks
//! of `admissionregistration.k8s.io/v1` Mutating- and ValidatingWebhookConfigurations, and the
//! ValidatingAdmissionPolicy plugin, which feeds the `admission-policy` engine the server's
//! policies, bindings, namespaces and params — for every resource the server serves: built-in
//! kinds, Karmada's kinds and custom resources.
//!
//! - [`config`]: the configurations as the watch cache holds them, compiled once per change
//!   (kube's configuration manager, which watches them).
//! - [`rules`]: which requests a webhook's rules take (operations, groups, versions,
//!   resources and subresources, scope; `matchPolicy: Equivalent` over the equivalent resources).
//! - [`equivalent`]: the resources that hold the same objects (kube's
//!   EquivalentResourceMapper), and an object as each of them serves it.
//! - [`selectors`]: namespaceSelector and objectSelector; `matchConditions` are compiled and
//!   evaluated by `admission-policy` (kube's CEL libraries, `authorizer` included).
//! - [`client`]: the HTTPS client of a webhook (`url` or `service`, caBundle, proxies from the
//!   environment as Go's transport reads them), with the aggregator's Service resolution.
//! - [`review`]: AdmissionReview v1 (and v1beta1) requests and the checks of responses.
//! - [`dispatch`]: the mutating dispatcher (in order, JSONPatch responses, reinvocation) and
//!   the validating one (in parallel), failurePolicy, timeouts, side effects and dry-run,
//!   warnings and audit annotations.
//! - [`metrics`]: kube's `apiserver_admission_webhook_*` series.
//! - [`authorizer`]: the server's RBAC as the `authorizer` variable of policies and of
//!   webhooks' conditions asks it.
//! - [`policy`]: the ValidatingAdmissionPolicy plugin (the engine and its metrics are
//!   `admission-policy`'s).
//! - [`policy_status`]: the policies' `status.typeChecking` (kube-controller-manager's
//!   validatingadmissionpolicystatus controller).
//!
//! The crate plugs into the generic server through `genericapiserver::admission_plugin`; it
//! must not depend on the `apiserver` crate, which installs it at launch.

pub mod authorizer;
pub mod client;
pub mod config;
pub mod dispatch;
pub mod equivalent;
pub mod metrics;
pub mod policy;
pub mod policy_status;
pub mod review;
pub mod rules;
pub mod selectors;

use std::sync::{Arc, Weak};

use genericapiserver::admission_plugin::{AdmissionPlugins, UserSource};
use genericapiserver::state::ApiState;

/// The dynamic admission plugins of a server in kube's order (the policy plugin before the
/// validating webhooks), reading their configurations from its watch caches; policies ask
/// `authorizer` what their `authorizer` checks ask.
pub fn plugins(
    state: &Arc<ApiState>,
    user: UserSource,
    authorizer: Arc<genericapiserver::auth::Authorizer>,
) -> AdmissionPlugins {
    let weak: Weak<ApiState> = Arc::downgrade(state);
    let clients = Arc::new(client::ClientManager::default());
    let authorizer: Arc<dyn admission_policy::Authorizer> =
        Arc::new(authorizer::ServerAuthorizer(authorizer));
    AdmissionPlugins {
        mutating: vec![Arc::new(dispatch::MutatingWebhook::new(
            weak.clone(),
            clients.clone(),
            authorizer.clone(),
        ))],
        validating: vec![
            Arc::new(policy::ValidatingAdmissionPolicy::new(
                weak.clone(),
                authorizer.clone(),
            )),
            Arc::new(dispatch::ValidatingWebhook::new(weak, clients, authorizer)),
        ],
        user,
    }
}
