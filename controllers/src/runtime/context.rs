//! The state every controller shares: the control-plane client, the shared informers, the event
//! sink and the member clients. One informer per resource serves all controllers, as Karmada's
//! shared informer factory does.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use karmada_api::cluster::v1alpha1::{Cluster, ClusterSyncMode};
use karmada_api::config::v1alpha1::{
    ResourceInterpreterCustomization, ResourceInterpreterWebhookConfiguration,
};
use karmada_api::policy::v1alpha1::{
    ClusterOverridePolicy, ClusterPropagationPolicy, FederatedResourceQuota, OverridePolicy,
    PropagationPolicy,
};
use karmada_api::well_known::labels;
use karmada_api::work::v1alpha2::{ClusterResourceBinding, ResourceBinding};
use kube::Client;
use kube::runtime::watcher;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::bindings::digest_statuses;
use super::cache::CachedWork;
use super::discovery::ServedResource;
use super::dynamic::DynamicInformers;
use super::events::EventSink;
use super::informer::Informer;
use super::precedence::{Class, Precedence};
use super::queue::WorkQueue;
use crate::interpreter::ResourceInterpreter;
use crate::member_clients::MemberClients;

/// Index of bindings and Works by the permanent id of their (Cluster)PropagationPolicy or
/// binding.
pub const BY_ID: &str = "by-id";
/// Index of Works by execution namespace.
pub const BY_NAMESPACE: &str = "by-namespace";

/// Settings of the controllers.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Namespaces (regular expressions, anchored) whose templates are never propagated;
    /// Karmada's --skipped-propagating-namespaces, default `kube-.*`.
    pub skipped_namespaces: Vec<String>,
    /// Workers per controller (Karmada's `--concurrent-*-syncs`).
    pub concurrency: Concurrency,
    /// Workers taking bindings from the scheduling queue. karmada-scheduler has one; ours are
    /// tasks, and with 16 more writes reach the store together (bigger commit batches), which
    /// the propagation bench measured as less time for a bulk of bindings.
    pub scheduler_workers: usize,
    /// The scheduler's `--enable-empty-workload-propagation` (false): selected clusters that
    /// get no replicas stay in the result with 0.
    pub enable_empty_workload_propagation: bool,
    /// How often the detector re-runs discovery (Karmada: 30 s); CRD changes also trigger it.
    pub discovery_interval: Duration,
    /// The bounds of every interpreter script call (Karmada: one second each).
    pub interpreter_limits: lua::Limits,
    /// Failover settings.
    pub failover: FailoverSettings,
    /// Which member clusters the execution, work-status and cluster-status controllers serve.
    pub scope: Scope,
    /// How every controller queue delays its retries (Karmada's `--rate-limiter-*` flags).
    pub rate_limiter: super::RateLimiterOptions,
    /// Karmada's PriorityBasedScheduling gate (Beta, on): bindings carry their policy's
    /// priority class value and are scheduled highest priority first.
    pub priority_based_scheduling: bool,
    /// Karmada's PropagationPolicyPreemption gate (Alpha, off): a policy with `preemption:
    /// Always` takes the templates it names over from lower-priority policies.
    pub policy_preemption: bool,
    /// Karmada's MultiClusterService gate (Alpha, off): the MultiClusterService controllers
    /// run.
    pub multi_cluster_service: bool,
    /// Karmada's FederatedQuotaEnforcement gate (Alpha, off): FederatedResourceQuotas limit
    /// what the scheduler may place in their namespace.
    pub federated_quota_enforcement: bool,
}

/// Karmada's `--concurrent-*-syncs` flags: how many workers each controller runs. A
/// controller-runtime controller's concurrency is that of the kind it reconciles, so every
/// controller of ResourceBindings (binding, binding status, graceful eviction, application
/// failover) runs `resource_binding` workers, and so on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Concurrency {
    /// `--concurrent-cluster-syncs` (5): the cluster and cluster-status controllers.
    pub cluster: usize,
    /// `--concurrent-clusterresourcebinding-syncs` (5).
    pub cluster_resource_binding: usize,
    /// `--concurrent-resourcebinding-syncs` (5).
    pub resource_binding: usize,
    /// `--concurrent-work-syncs` (5): execution and work status.
    pub work: usize,
    /// `--concurrent-namespace-syncs` (1).
    pub namespace: usize,
    /// `--concurrent-propagation-policy-syncs` (1).
    pub propagation_policy: usize,
    /// `--concurrent-cluster-propagation-policy-syncs` (1).
    pub cluster_propagation_policy: usize,
    /// `--concurrent-resource-template-syncs` (5): the detector.
    pub resource_template: usize,
    /// `--concurrent-dependent-resource-syncs` (2): the dependencies distributor.
    pub dependent_resource: usize,
}

impl Default for Concurrency {
    fn default() -> Self {
        Concurrency {
            cluster: 5,
            cluster_resource_binding: 5,
            resource_binding: 5,
            work: 5,
            namespace: 1,
            propagation_policy: 1,
            cluster_propagation_policy: 1,
            resource_template: 5,
            dependent_resource: 2,
        }
    }
}

impl Concurrency {
    /// Workers of a queue that holds both ResourceBindings and ClusterResourceBindings: the two
    /// controllers' workers together.
    pub fn bindings(&self) -> usize {
        self.resource_binding + self.cluster_resource_binding
    }
}

/// Settings of taint-based eviction and graceful eviction (Karmada's cluster failover flags).
#[derive(Clone, Debug)]
pub struct FailoverSettings {
    /// `--enable-no-execute-taint-eviction` (false): whether NoExecute cluster taints evict
    /// the workloads that do not tolerate them.
    pub enable_no_execute_taint_eviction: bool,
    /// `--no-execute-taint-eviction-purge-mode` (Gracefully): the purge mode of taint
    /// evictions for bindings whose policy sets no `failover.cluster`.
    pub no_execute_taint_eviction_purge_mode: karmada_api::policy::v1alpha1::PurgeMode,
    /// `--graceful-eviction-timeout` (10 min): how long an eviction task without its own
    /// grace period keeps the old copy at most.
    pub graceful_eviction_timeout: Duration,
    /// `--resource-eviction-rate` (0.5): bindings each taint-manager worker evicts per second
    /// at most; 0 stops evictions (a pause of 30 min between two).
    pub resource_eviction_rate: f32,
}

impl Default for FailoverSettings {
    fn default() -> Self {
        FailoverSettings {
            enable_no_execute_taint_eviction: false,
            no_execute_taint_eviction_purge_mode:
                karmada_api::policy::v1alpha1::PurgeMode::Gracefully,
            graceful_eviction_timeout: Duration::from_secs(600),
            resource_eviction_rate: 0.5,
        }
    }
}

/// Which member clusters a process applies Works to and reports on: the control plane serves
/// Push clusters, a karmada-agent its own cluster (Karmada's `NewExecutionPredicate` and
/// `NewPredicateForAgent`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Scope {
    /// The control plane's controllers: Push clusters only; Pull clusters are their agents'.
    #[default]
    ControlPlane,
    /// A karmada-agent: only the named cluster, whose Works and Cluster it alone may read.
    Agent(String),
}

impl Scope {
    /// Whether this process executes Works for, and reports the status of, `cluster`.
    pub fn serves(&self, cluster: &Cluster) -> bool {
        match self {
            Scope::ControlPlane => cluster.spec.sync_mode == ClusterSyncMode::Push,
            Scope::Agent(name) => cluster.metadata.name.as_deref() == Some(name.as_str()),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            skipped_namespaces: vec!["kube-.*".to_owned()],
            concurrency: Concurrency::default(),
            scheduler_workers: 16,
            enable_empty_workload_propagation: false,
            discovery_interval: Duration::from_secs(30),
            failover: FailoverSettings::default(),
            interpreter_limits: lua::Limits::default(),
            scope: Scope::ControlPlane,
            rate_limiter: super::RateLimiterOptions::default(),
            priority_based_scheduling: true,
            policy_preemption: false,
            multi_cluster_service: false,
            federated_quota_enforcement: false,
        }
    }
}

/// The informers and clients shared by the controllers.
pub struct Context {
    /// The control-plane client.
    pub client: Client,
    /// Controller settings.
    pub settings: Settings,
    /// Member clusters.
    pub clusters: Informer<Cluster>,
    /// PropagationPolicies.
    pub pps: Informer<PropagationPolicy>,
    /// ClusterPropagationPolicies.
    pub cpps: Informer<ClusterPropagationPolicy>,
    /// OverridePolicies.
    pub ops: Informer<OverridePolicy>,
    /// ClusterOverridePolicies.
    pub cops: Informer<ClusterOverridePolicy>,
    /// ResourceBindings, indexed [`BY_ID`] by their policy's permanent id.
    pub rbs: Informer<ResourceBinding>,
    /// ClusterResourceBindings, indexed [`BY_ID`] by their policy's permanent id.
    pub crbs: Informer<ClusterResourceBinding>,
    /// Works, indexed [`BY_ID`] by their binding's permanent id and [`BY_NAMESPACE`].
    pub works: Informer<CachedWork>,
    /// Namespaces of the control plane.
    pub namespaces: Informer<Namespace>,
    /// FederatedResourceQuotas, indexed by namespace.
    pub frqs: Informer<FederatedResourceQuota>,
    /// ResourceInterpreterCustomizations, loaded into [`Context::interpreter`] on every change.
    pub customizations: Informer<ResourceInterpreterCustomization>,
    /// ResourceInterpreterWebhookConfigurations, loaded likewise.
    pub interpreter_webhooks: Informer<ResourceInterpreterWebhookConfiguration>,
    /// The resource interpreter: customizations, webhooks, shipped customizations, built-in.
    pub interpreter: Arc<ResourceInterpreter>,
    /// Resource templates: one informer per served kind, run by the detector.
    pub templates: Arc<DynamicInformers>,
    /// The resources the control plane serves, as the detector last discovered them.
    pub served: watch::Sender<Arc<Vec<ServedResource>>>,
    /// Member cluster clients.
    pub members: MemberClients,
    /// Where events go.
    pub events: EventSink,
    /// The placement queues' waiting keys, which hold back the status queues' extra workers.
    pub precedence: Arc<Precedence>,
}

fn policy_ids(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Vec<String> {
    let mut v = Vec::new();
    for k in [
        labels::PROPAGATION_POLICY_PERMANENT_ID,
        labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
    ] {
        if let Some(id) = super::label(meta, k) {
            v.push(id.to_owned());
        }
    }
    v
}

impl Context {
    /// A controller's queue: the controllers' rate limiter (`--rate-limiter-*`), in `class` of
    /// the shared [`Precedence`].
    pub fn queue<K>(&self, name: &'static str, class: Class) -> WorkQueue<K>
    where
        K: Clone + Eq + std::hash::Hash + std::fmt::Debug + Send + Sync + 'static,
    {
        WorkQueue::with_rate_limiter(name, self.settings.rate_limiter)
            .with_precedence(class, self.precedence.clone())
    }

    /// Creates the informers (not yet running) and the event sink.
    pub fn new(
        client: Client,
        settings: Settings,
        members: MemberClients,
    ) -> (Arc<Context>, JoinHandle<()>) {
        let (events, events_task) = EventSink::start(client.clone());
        let interpreter = Arc::new(ResourceInterpreter::new(
            Some(client.clone()),
            settings.interpreter_limits.clone(),
        ));
        let ctx = Context {
            templates: DynamicInformers::new(
                client.clone(),
                None,
                Some(|o: &mut super::RawObject| {
                    o.digest = o.spec_hash();
                    o.pack();
                }),
            ),
            client,
            settings,
            clusters: Informer::builder("clusters").build(),
            pps: Informer::builder("propagationpolicies").build(),
            cpps: Informer::builder("clusterpropagationpolicies").build(),
            ops: Informer::builder("overridepolicies").build(),
            cops: Informer::builder("clusteroverridepolicies").build(),
            rbs: Informer::builder("resourcebindings")
                .index(BY_ID, |b: &ResourceBinding| policy_ids(&b.metadata))
                .transform(|b: &mut ResourceBinding| {
                    digest_statuses(&mut b.status.aggregated_status)
                })
                .build(),
            crbs: Informer::builder("clusterresourcebindings")
                .index(BY_ID, |b: &ClusterResourceBinding| policy_ids(&b.metadata))
                .transform(|b: &mut ClusterResourceBinding| {
                    digest_statuses(&mut b.status.aggregated_status)
                })
                .build(),
            works: Informer::builder("works")
                .index(BY_ID, |w: &CachedWork| {
                    w.binding_id()
                        .map(|s| vec![s.to_owned()])
                        .unwrap_or_default()
                })
                .index(BY_NAMESPACE, |w: &CachedWork| {
                    vec![w.metadata.namespace.clone().unwrap_or_default()]
                })
                .build(),
            namespaces: Informer::builder("namespaces").build(),
            frqs: Informer::builder("federatedresourcequotas")
                .index(BY_NAMESPACE, |q: &FederatedResourceQuota| {
                    vec![q.metadata.namespace.clone().unwrap_or_default()]
                })
                .build(),
            customizations: Informer::builder("resourceinterpretercustomizations").build(),
            interpreter_webhooks: Informer::builder("resourceinterpreterwebhookconfigurations")
                .build(),
            interpreter,
            served: watch::channel(Arc::new(Vec::new())).0,
            members,
            events,
            precedence: Arc::default(),
        };
        (Arc::new(ctx), events_task)
    }

    /// Starts the typed informers. An agent's identity may read only its own Cluster and
    /// execution space, so it runs just those two informers, narrowed to them.
    pub fn run_informers(&self) -> Vec<JoinHandle<()>> {
        let c = &self.client;
        let cfg = watcher::Config::default;
        if let Scope::Agent(name) = &self.settings.scope {
            let space = karmada_api::names::execution_space_name(name);
            return vec![
                self.clusters.run(
                    kube::Api::all(c.clone()),
                    cfg().fields(&format!("metadata.name={name}")),
                ),
                self.works
                    .run(kube::Api::namespaced(c.clone(), &space), cfg()),
            ];
        }
        vec![
            self.clusters.run(kube::Api::all(c.clone()), cfg()),
            self.pps.run(kube::Api::all(c.clone()), cfg()),
            self.cpps.run(kube::Api::all(c.clone()), cfg()),
            self.ops.run(kube::Api::all(c.clone()), cfg()),
            self.cops.run(kube::Api::all(c.clone()), cfg()),
            self.rbs.run(kube::Api::all(c.clone()), cfg()),
            self.crbs.run(kube::Api::all(c.clone()), cfg()),
            self.works.run(kube::Api::all(c.clone()), cfg()),
            self.namespaces.run(kube::Api::all(c.clone()), cfg()),
            self.frqs.run(kube::Api::all(c.clone()), cfg()),
            self.customizations.run(kube::Api::all(c.clone()), cfg()),
            self.interpreter_webhooks
                .run(kube::Api::all(c.clone()), cfg()),
        ]
    }

    /// Waits until every typed informer has its first full list.
    pub async fn wait_synced(&self) {
        self.clusters.wait_synced().await;
        if matches!(self.settings.scope, Scope::Agent(_)) {
            // The only informers an agent runs (see run_informers).
            self.works.wait_synced().await;
            return;
        }
        self.pps.wait_synced().await;
        self.cpps.wait_synced().await;
        self.ops.wait_synced().await;
        self.cops.wait_synced().await;
        self.rbs.wait_synced().await;
        self.crbs.wait_synced().await;
        self.works.wait_synced().await;
        self.namespaces.wait_synced().await;
        self.frqs.wait_synced().await;
        self.customizations.wait_synced().await;
        self.interpreter_webhooks.wait_synced().await;
    }

    /// Keeps the interpreter's customizations and webhooks in step with their informers (a
    /// change takes effect at the next call, without restart). Call before the informers run.
    pub fn load_interpreter_configuration(self: &Arc<Self>) {
        let ctx = Arc::downgrade(self);
        self.customizations.on_change(move |_| {
            if let Some(ctx) = ctx.upgrade() {
                let items: Vec<_> = ctx
                    .customizations
                    .list()
                    .iter()
                    .map(|c| (**c).clone())
                    .collect();
                ctx.interpreter.load_customizations(&items);
            }
        });
        let ctx = Arc::downgrade(self);
        self.interpreter_webhooks.on_change(move |_| {
            if let Some(ctx) = ctx.upgrade() {
                let items: Vec<_> = ctx
                    .interpreter_webhooks
                    .list()
                    .iter()
                    .map(|c| (**c).clone())
                    .collect();
                ctx.interpreter.load_webhooks(&items);
            }
        });
    }

    /// The served resource for an apiVersion and kind, from the last discovery.
    pub fn served_resource(&self, api_version: &str, kind: &str) -> Option<ServedResource> {
        self.served
            .borrow()
            .iter()
            .find(|r| r.kind == kind && r.api_version() == api_version)
            .cloned()
    }

    /// The template with this type, namespace and name from the template informers.
    pub fn template(&self, key: &super::ObjectKey) -> Option<Arc<super::RawObject>> {
        self.templates
            .get(&key.api_version, &key.kind)?
            .get(&key.key())
    }
}
