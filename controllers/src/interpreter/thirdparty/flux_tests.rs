//! The shipped customizations of Flux's kinds (sources, Kustomization, HelmRelease v2beta1):
//! the suspend switch is kept, status is reflected with the generations aggregation needs,
//! members' conditions merge by type, status and reason, the template's observedGeneration
//! advances only when every member has caught up, and referenced Secrets, ConfigMaps and
//! ServiceAccounts are dependencies.

use karmada_api::work::v1alpha1::ResourceHealth;
use serde_json::{Value, json};

use super::tests::{deps, interpreter, items};

fn object(api_version: &str, kind: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind,
           "metadata": {"name": "podinfo", "namespace": "flux-apps", "generation": 3},
           "spec": spec})
}

fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": message,
           "lastTransitionTime": "2026-03-01T08:00:00Z", "observedGeneration": 3})
}

/// What a member reflects after applying template generation 3 and reconciling it.
fn observed(template: &Value, status: Value) -> Value {
    let mut o = template.clone();
    o["metadata"]["generation"] = json!(7);
    o["metadata"]["annotations"] = json!({"resourcetemplate.karmada.io/generation": "3"});
    o["status"] = status;
    o
}

/// The behaviour every Flux kind shares: retention of spec.suspend, health from the Ready
/// condition and its success reason, and the generation bookkeeping of aggregation.
async fn shared_behaviour(template: &Value, ready_reason: &str) {
    let i = interpreter();
    let mut member = template.clone();
    member["spec"]["suspend"] = json!(true);
    let retained = i.retain(template, &member).await.expect("retain");
    assert_eq!(retained["spec"]["suspend"], true, "suspended in the member");
    let unset = i.retain(template, template).await.expect("retain");
    assert!(unset["spec"].get("suspend").is_none());

    let ready = observed(
        template,
        json!({"observedGeneration": 7, "conditions": [condition("Ready", "True", ready_reason, "done")]}),
    );
    assert_eq!(
        i.interpret_health(&ready).await,
        Ok(ResourceHealth::Healthy)
    );
    let mut other = ready.clone();
    other["status"]["conditions"][0]["reason"] = json!("Progressing");
    assert_eq!(
        i.interpret_health(&other).await,
        Ok(ResourceHealth::Unhealthy),
        "Ready for another reason"
    );
    other["status"]["conditions"] = json!([condition("Ready", "False", ready_reason, "")]);
    assert_eq!(
        i.interpret_health(&other).await,
        Ok(ResourceHealth::Unhealthy)
    );
    assert_eq!(
        i.interpret_health(template).await,
        Ok(ResourceHealth::Unhealthy),
        "no status yet"
    );

    let reflected = i
        .reflect_status(&ready)
        .await
        .expect("reflect")
        .expect("status");
    assert_eq!(reflected["generation"], 7);
    assert_eq!(reflected["resourceTemplateGeneration"], 3);
    assert_eq!(reflected["observedGeneration"], 7);
    assert_eq!(reflected["conditions"][0]["reason"], ready_reason);

    // Both members caught up: the template has observed generation 3.
    let failing = json!({"generation": 7, "observedGeneration": 7, "resourceTemplateGeneration": 3,
        "conditions": [condition("Ready", "False", "Failed", "boom"),
                       condition("Reconciling", "True", "Progressing", "retrying")]});
    let mut stale_template = template.clone();
    stale_template["status"] = json!({"observedGeneration": 2});
    let status = i
        .aggregate_status(
            &stale_template,
            &items(&[
                ("m1", reflected.clone()),
                ("m2", reflected.clone()),
                ("m3", failing),
            ]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["observedGeneration"], 3);
    let conditions = status["conditions"].as_array().expect("conditions");
    assert_eq!(conditions.len(), 3, "{conditions:?}");
    assert_eq!(conditions[0]["message"], "m1=done, m2=done");
    assert_eq!(conditions[0]["status"], "True");
    assert_eq!(conditions[1]["message"], "m3=boom");
    assert_eq!(conditions[1]["reason"], "Failed");
    assert_eq!(conditions[2]["type"], "Reconciling");

    // A member still on the previous template generation holds observedGeneration back.
    let mut behind = reflected.clone();
    behind["resourceTemplateGeneration"] = json!(2);
    let status = i
        .aggregate_status(
            &stale_template,
            &items(&[("m1", reflected.clone()), ("m2", behind)]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["observedGeneration"], 2);
    // So does one whose controller has not observed its latest generation.
    let mut busy = reflected;
    busy["observedGeneration"] = json!(6);
    let status = i
        .aggregate_status(&stale_template, &items(&[("m1", busy)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["observedGeneration"], 2);
}

/// The status the template gets when no member reports one (statusItems nil).
async fn aggregate_without_items(template: &Value) -> Value {
    let i = interpreter();
    let customization = super::customizations()
        .into_iter()
        .find(|c| {
            c.spec.target.api_version == template["apiVersion"]
                && c.spec.target.kind == template["kind"]
        })
        .expect("shipped");
    i.load_customizations(&[customization]);
    let aggregated = i
        .aggregate_customized(template, Value::Null)
        .await
        .expect("aggregate")
        .expect("scripted");
    aggregated["status"].clone()
}

#[tokio::test]
async fn flux_git_repository() {
    let repo = object(
        "source.toolkit.fluxcd.io/v1",
        "GitRepository",
        json!({"url": "https://example.com/podinfo.git", "interval": "1m",
               "secretRef": {"name": "git-auth"},
               "verify": {"mode": "HEAD", "secretRef": {"name": "pgp-keys"}}}),
    );
    shared_behaviour(&repo, "Succeeded").await;
    let i = interpreter();
    assert_eq!(
        deps(&i.get_dependencies(&repo).await.expect("deps")),
        [
            "v1 Secret flux-apps/git-auth",
            "v1 Secret flux-apps/pgp-keys"
        ]
    );
    let mut same = repo.clone();
    same["spec"]["verify"]["secretRef"]["name"] = json!("git-auth");
    assert_eq!(
        deps(&i.get_dependencies(&same).await.expect("deps")),
        ["v1 Secret flux-apps/git-auth"],
        "one Secret named twice is one dependency"
    );

    let status = |revision: &str| {
        json!({"artifact": {"revision": revision, "digest": "sha256:1"}, "observedGeneration": 1,
               "observedIgnore": "*.md", "observedRecurseSubmodules": true, "conditions": []})
    };
    let reflected = i
        .reflect_status(&observed(&repo, status("main@sha1:aa")))
        .await
        .expect("reflect")
        .expect("status");
    assert_eq!(reflected["observedIgnore"], "*.md");
    assert_eq!(reflected["observedRecurseSubmodules"], true);
    assert_eq!(reflected["artifact"]["revision"], "main@sha1:aa");
    let status = i
        .aggregate_status(
            &repo,
            &items(&[
                ("m1", status("main@sha1:aa")),
                ("m2", status("main@sha1:bb")),
            ]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(
        status["artifact"]["revision"], "main@sha1:bb",
        "the last member's artifact"
    );
    assert!(
        status.get("observedIgnore").is_none(),
        "only conditions and the artifact are aggregated"
    );
    let empty = aggregate_without_items(&repo).await;
    assert_eq!(empty["observedGeneration"], 3);
    assert!(
        empty
            .get("conditions")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty),
        "no conditions: {empty}"
    );
}

#[tokio::test]
async fn flux_bucket_helm_repository_and_oci_repository() {
    let i = interpreter();
    for (api_version, kind, spec, want) in [
        (
            "source.toolkit.fluxcd.io/v1beta2",
            "Bucket",
            json!({"bucketName": "charts", "endpoint": "s3.example.com", "secretRef": {"name": "s3"}}),
            vec!["v1 Secret flux-apps/s3"],
        ),
        (
            "source.toolkit.fluxcd.io/v1beta2",
            "HelmRepository",
            json!({"url": "https://charts.example.com", "secretRef": {"name": "basic-auth"}}),
            vec!["v1 Secret flux-apps/basic-auth"],
        ),
        (
            "source.toolkit.fluxcd.io/v1beta2",
            "OCIRepository",
            json!({"url": "oci://ghcr.io/example/manifests", "secretRef": {"name": "pull"},
                   "certSecretRef": {"name": "tls"}, "verify": {"provider": "cosign", "secretRef": {"name": "cosign-pub"}},
                   "serviceAccountName": "puller", "layerSelector": {"mediaType": "x"}}),
            vec![
                "v1 Secret flux-apps/cosign-pub",
                "v1 Secret flux-apps/pull",
                "v1 Secret flux-apps/tls",
                "v1 ServiceAccount flux-apps/puller",
            ],
        ),
    ] {
        let source = object(api_version, kind, spec);
        shared_behaviour(&source, "Succeeded").await;
        assert_eq!(
            deps(&i.get_dependencies(&source).await.expect("deps")),
            want,
            "{kind}"
        );
        let mut bare = source.clone();
        bare["spec"] = json!({"url": "https://example.com"});
        assert!(
            i.get_dependencies(&bare).await.expect("deps").is_empty(),
            "{kind}"
        );
        bare.as_object_mut().expect("object").remove("metadata");
        assert!(
            i.get_dependencies(&bare).await.expect("deps").is_empty(),
            "{kind} without metadata"
        );

        let status = |url: &str| {
            json!({"url": url, "artifact": {"revision": "r"}, "observedIgnore": "*.md",
                   "observedLayerSelector": {"mediaType": "x"}})
        };
        let reflected = i
            .reflect_status(&observed(&source, status("http://m1/index.yaml")))
            .await
            .expect("reflect")
            .expect("status");
        assert_eq!(reflected["url"], "http://m1/index.yaml", "{kind}");
        assert_eq!(
            reflected.get("observedLayerSelector").is_some(),
            kind == "OCIRepository",
            "{kind}"
        );
        assert_eq!(
            reflected.get("observedIgnore").is_some(),
            kind != "HelmRepository",
            "{kind}"
        );
        let aggregated = i
            .aggregate_status(
                &source,
                &items(&[
                    ("m1", status("http://m1/index.yaml")),
                    ("m2", status("")),
                    ("m3", json!({})),
                ]),
            )
            .await
            .expect("aggregate")
            .expect("changed");
        assert_eq!(
            aggregated["url"], "http://m1/index.yaml",
            "{kind}: the last non-empty url"
        );
        let empty = aggregate_without_items(&source).await;
        assert_eq!(empty["url"], "", "{kind}");
        assert_eq!(empty["observedGeneration"], 3, "{kind}");
    }
}

#[tokio::test]
async fn flux_helm_chart() {
    let chart = object(
        "source.toolkit.fluxcd.io/v1beta2",
        "HelmChart",
        json!({"chart": "podinfo", "version": "6.x",
               "sourceRef": {"kind": "HelmRepository", "name": "charts"},
               "verify": {"provider": "cosign", "secretRef": {"name": "cosign-pub"}}}),
    );
    shared_behaviour(&chart, "ChartPullSucceeded").await;
    shared_behaviour(&chart, "Succeeded").await;
    let i = interpreter();
    assert_eq!(
        deps(&i.get_dependencies(&chart).await.expect("deps")),
        ["v1 Secret flux-apps/cosign-pub"]
    );
    let status = |name: &str, revision: &str| {
        json!({"observedChartName": name, "observedSourceArtifactRevision": revision,
               "url": "http://source/podinfo.tgz", "artifact": {"revision": "6.5.0"}})
    };
    let reflected = i
        .reflect_status(&observed(&chart, status("podinfo", "sha256:1")))
        .await
        .expect("reflect")
        .expect("status");
    assert_eq!(reflected["observedChartName"], "podinfo");
    assert_eq!(reflected["observedSourceArtifactRevision"], "sha256:1");
    let aggregated = i
        .aggregate_status(
            &chart,
            &items(&[
                ("m1", status("podinfo", "sha256:1")),
                ("m2", status("", "sha256:2")),
            ]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(aggregated["observedChartName"], "podinfo");
    assert_eq!(aggregated["observedSourceArtifactRevision"], "sha256:2");
    assert_eq!(aggregated["artifact"]["revision"], "6.5.0");
    let empty = aggregate_without_items(&chart).await;
    assert_eq!(empty["observedChartName"], "");
}

#[tokio::test]
async fn flux_kustomization() {
    let mut k = object(
        "kustomize.toolkit.fluxcd.io/v1",
        "Kustomization",
        json!({"path": "./deploy", "prune": true, "sourceRef": {"kind": "GitRepository", "name": "podinfo"},
               "decryption": {"provider": "sops", "secretRef": {"name": "sops-age"}},
               "kubeConfig": {"secretRef": {"name": "remote"}}, "serviceAccountName": "applier"}),
    );
    shared_behaviour(&k, "ReconciliationSucceeded").await;
    let i = interpreter();
    assert_eq!(
        deps(&i.get_dependencies(&k).await.expect("deps")),
        [
            "v1 Secret flux-apps/remote",
            "v1 Secret flux-apps/sops-age",
            "v1 ServiceAccount flux-apps/applier"
        ]
    );
    k["status"] =
        json!({"lastAppliedRevision": "main@sha1:01", "lastAttemptedRevision": "main@sha1:01"});
    let aggregated = i
        .aggregate_status(
            &k,
            &items(&[
                (
                    "m1",
                    json!({"lastAttemptedRevision": "main@sha1:02", "lastAppliedRevision": ""}),
                ),
                ("m2", json!({"lastAttemptedRevision": ""})),
            ]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(aggregated["lastAttemptedRevision"], "main@sha1:02");
    assert_eq!(
        aggregated["lastAppliedRevision"], "main@sha1:01",
        "kept while no member reports one"
    );
    let reflected = i
        .reflect_status(&observed(
            &k,
            json!({"lastAppliedRevision": "main@sha1:02", "inventory": {"entries": []}}),
        ))
        .await
        .expect("reflect")
        .expect("status");
    assert_eq!(reflected["lastAppliedRevision"], "main@sha1:02");
    assert!(reflected.get("inventory").is_none());
    let empty = aggregate_without_items(&k).await;
    assert_eq!(empty["lastAppliedRevision"], "");
    assert_eq!(empty["observedGeneration"], 3);
}

#[tokio::test]
async fn flux_helm_release_v2beta1() {
    let mut hr = object(
        "helm.toolkit.fluxcd.io/v2beta1",
        "HelmRelease",
        json!({"interval": "5m",
               "chart": {"spec": {"chart": "podinfo", "sourceRef": {"kind": "HelmRepository", "name": "charts"},
                                  "verify": {"provider": "cosign", "secretRef": {"name": "cosign-pub"}}}},
               "valuesFrom": [{"kind": "ConfigMap", "name": "values"}, {"kind": "Secret", "name": "secret-values"},
                              {"kind": "ConfigMap", "name": "values"}],
               "kubeConfig": {"secretRef": {"name": "remote"}}, "serviceAccountName": "deployer"}),
    );
    shared_behaviour(&hr, "ReconciliationSucceeded").await;
    let i = interpreter();
    assert_eq!(
        deps(&i.get_dependencies(&hr).await.expect("deps")),
        [
            "v1 ConfigMap flux-apps/values",
            "v1 Secret flux-apps/cosign-pub",
            "v1 Secret flux-apps/remote",
            "v1 Secret flux-apps/secret-values",
            "v1 ServiceAccount flux-apps/deployer"
        ]
    );
    let member = |failures: i64, chart: &str| {
        json!({"failures": failures, "installFailures": 1, "upgradeFailures": 0, "helmChart": chart,
               "lastAttemptedRevision": "6.5.0", "lastAppliedRevision": "6.4.0",
               "lastAttemptedValuesChecksum": "c0ffee", "lastReleaseRevision": 4})
    };
    let reflected = i
        .reflect_status(&observed(&hr, member(2, "flux-apps/flux-apps-podinfo")))
        .await
        .expect("reflect")
        .expect("status");
    assert_eq!(reflected["failures"], 2);
    assert_eq!(reflected["lastAttemptedValuesChecksum"], "c0ffee");
    assert_eq!(reflected["lastReleaseRevision"], 4);
    hr["status"] = json!({"failures": 1, "installFailures": 0});
    let aggregated = i
        .aggregate_status(
            &hr,
            &items(&[("m1", member(2, "flux-apps/a")), ("m2", member(3, ""))]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(aggregated["failures"], 6, "added to the template's count");
    assert_eq!(aggregated["installFailures"], 2);
    assert!(
        aggregated.get("upgradeFailures").is_none(),
        "not counted where the template has no counter"
    );
    assert_eq!(aggregated["helmChart"], "flux-apps/a");
    assert_eq!(aggregated["lastAppliedRevision"], "6.4.0");
    assert_eq!(aggregated["lastReleaseRevision"], 4);
    hr.as_object_mut().expect("object").remove("status");
    let empty = aggregate_without_items(&hr).await;
    assert_eq!(empty["failures"], 0);
    assert_eq!(empty["helmChart"], "");
    assert_eq!(empty["observedGeneration"], 3);
}
