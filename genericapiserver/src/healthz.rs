//! Health checks as k8s.io/apiserver's `pkg/server/healthz` serves them: `/healthz`, `/livez`
//! and `/readyz`, each running its list of named checks in the order they were added.
//!
//! - All pass: 200 `ok`, or with `?verbose` one `[+]NAME ok` line per check and
//!   `readyz check passed`.
//! - One fails: 500 with every check's line, the failing ones as `[-]NAME failed: reason
//!   withheld` (the endpoints are public, so the reason goes to the log only), and
//!   `readyz check failed` (`handleRootHealth`).
//! - `?exclude=NAME` skips a check (`[+]NAME excluded: ok`); names that match none are
//!   reported in a `warn:` line.
//! - `/readyz/NAME` runs one check: 200 `ok`, or 500 `internal server error: REASON`
//!   (`adaptCheckToHandler`); an unknown name is not a route (404).
//!
//! The list can grow while the server starts (post-start hooks register as they begin) and a
//! check can be replaced by name (the start-up's view of etcd gives way to the store's).

use std::sync::{Arc, RwLock};

use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use http::{HeaderValue, StatusCode, header};

/// The three health endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// `/healthz` (deprecated in kube for `/livez` and `/readyz`, still served).
    Healthz,
    /// `/livez`: is the process alive (a failure means restart it).
    Livez,
    /// `/readyz`: may it take traffic.
    Readyz,
}

impl Probe {
    /// The probe a path's first segment names (`/readyz`, `/readyz/etcd`).
    pub fn of_path(path: &str) -> Option<(Probe, Option<&str>)> {
        let rest = path.strip_prefix('/')?;
        let (head, check) = match rest.split_once('/') {
            Some((h, c)) => (h, Some(c)),
            None => (rest, None),
        };
        let probe = match head {
            "healthz" => Probe::Healthz,
            "livez" => Probe::Livez,
            "readyz" => Probe::Readyz,
            _ => return None,
        };
        Some((probe, check.filter(|c| !c.is_empty())))
    }

    fn name(self) -> &'static str {
        match self {
            Probe::Healthz => "healthz",
            Probe::Livez => "livez",
            Probe::Readyz => "readyz",
        }
    }

    fn bit(self) -> u8 {
        match self {
            Probe::Healthz => 1,
            Probe::Livez => 2,
            Probe::Readyz => 4,
        }
    }
}

/// Every probe.
pub const ALL: &[Probe] = &[Probe::Healthz, Probe::Livez, Probe::Readyz];
/// The probes of a check a starting or broken server fails without being dead: kube's livez
/// would restart a server whose etcd is briefly away, which only makes things worse.
pub const HEALTH_AND_READY: &[Probe] = &[Probe::Healthz, Probe::Readyz];

/// A check: Ok, or why it fails.
pub type CheckFn = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// A check from a synchronous test.
pub fn check(f: impl Fn() -> Result<(), String> + Send + Sync + 'static) -> CheckFn {
    let f = Arc::new(f);
    Arc::new(move || {
        let f = f.clone();
        Box::pin(async move { f() })
    })
}

#[derive(Clone)]
struct Check {
    name: String,
    probes: u8,
    run: CheckFn,
}

/// The server's checks.
pub struct Health {
    checks: RwLock<Vec<Check>>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Default for Health {
    fn default() -> Health {
        Health::new()
    }
}

/// A post-start hook's check (`poststarthook/NAME`): fails until [`Hook::done`].
#[derive(Clone, Debug)]
pub struct Hook(Arc<std::sync::atomic::AtomicBool>);

impl Hook {
    /// The hook finished: its check passes from now on.
    pub fn done(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

impl Health {
    /// kube's default checks, `ping` and `log`, on every probe.
    pub fn new() -> Health {
        let h = Health {
            checks: RwLock::new(Vec::new()),
        };
        h.add("ping", ALL, check(|| Ok(())));
        h.add("log", ALL, check(|| Ok(())));
        h
    }

    /// Adds a check to `probes`, or replaces the one of the same name where it stands.
    pub fn add(&self, name: &str, probes: &[Probe], run: CheckFn) {
        let probes = probes.iter().fold(0, |m, p| m | p.bit());
        let new = Check {
            name: name.to_string(),
            probes,
            run,
        };
        let mut checks = self.checks.write().unwrap_or_else(|p| p.into_inner());
        match checks.iter_mut().find(|c| c.name == name) {
            Some(c) => *c = new,
            None => checks.push(new),
        }
    }

    /// Registers the post-start hook `poststarthook/NAME` (on /healthz and /readyz, kube's
    /// livez grace lets a starting server live) and returns its handle.
    pub fn hook(&self, name: &str) -> Hook {
        let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = flag.clone();
        self.add(
            &format!("poststarthook/{name}"),
            HEALTH_AND_READY,
            check(move || {
                if seen.load(std::sync::atomic::Ordering::Acquire) {
                    Ok(())
                } else {
                    Err("not finished".into())
                }
            }),
        );
        Hook(flag)
    }

    /// The checks' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.list(None).into_iter().map(|c| c.name).collect()
    }

    fn list(&self, probe: Option<Probe>) -> Vec<Check> {
        let checks = self.checks.read().unwrap_or_else(|p| p.into_inner());
        checks
            .iter()
            .filter(|c| probe.is_none_or(|p| c.probes & p.bit() != 0))
            .cloned()
            .collect()
    }

    /// The names of the checks of `probe` that fail now.
    pub async fn failing(&self, probe: Probe) -> Vec<String> {
        let mut failed = Vec::new();
        for c in self.list(Some(probe)) {
            if (c.run)().await.is_err() {
                failed.push(c.name);
            }
        }
        failed
    }

    /// Answers a health request: `check` is the path segment after the probe (one check),
    /// `query` the request's query string. None: no such check (the caller's 404).
    pub async fn respond(
        &self,
        probe: Probe,
        check: Option<&str>,
        query: Option<&str>,
    ) -> Option<Response> {
        let checks = self.list(Some(probe));
        if let Some(name) = check {
            let c = checks.iter().find(|c| c.name == name)?;
            return Some(match (c.run)().await {
                Ok(()) => text(StatusCode::OK, "ok".to_string()),
                Err(e) => text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("internal server error: {e}\n"),
                ),
            });
        }
        let mut excluded: Vec<String> = Vec::new();
        let mut verbose = false;
        for (k, v) in form_urlencoded(query.unwrap_or("")) {
            match k.as_str() {
                "verbose" => verbose = true,
                // kube reads every `exclude` value, each possibly comma-separated.
                "exclude" => excluded.extend(
                    v.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(String::from),
                ),
                _ => {}
            }
        }
        let mut out = String::new();
        let mut failed = Vec::new();
        for c in &checks {
            if let Some(i) = excluded.iter().position(|e| *e == c.name) {
                excluded.remove(i);
                out.push_str(&format!("[+]{} excluded: ok\n", c.name));
                continue;
            }
            match (c.run)().await {
                Ok(()) => out.push_str(&format!("[+]{} ok\n", c.name)),
                Err(e) => {
                    out.push_str(&format!("[-]{} failed: reason withheld\n", c.name));
                    tracing::debug!(check = %c.name, probe = probe.name(), reason = %e, "health check failed");
                    failed.push(c.name.clone());
                }
            }
        }
        if !excluded.is_empty() {
            let quoted: Vec<String> = excluded.iter().map(|e| format!("{e:?}")).collect();
            out.push_str(&format!(
                "warn: some health checks cannot be excluded: no matches for {}\n",
                quoted.join(",")
            ));
        }
        let name = probe.name();
        if !failed.is_empty() {
            out.push_str(&format!("{name} check failed\n"));
            return Some(text(StatusCode::INTERNAL_SERVER_ERROR, out));
        }
        if !verbose {
            return Some(text(StatusCode::OK, "ok".to_string()));
        }
        out.push_str(&format!("{name} check passed\n"));
        Some(text(StatusCode::OK, out))
    }
}

/// A plain-text answer as Go's health handlers write it.
fn text(status: StatusCode, body: String) -> Response {
    let mut resp = (status, body).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

fn form_urlencoded(q: &str) -> Vec<(String, String)> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(q).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn body(r: Response) -> (u16, String) {
        let status = r.status().as_u16();
        let bytes = r.into_body().collect().await.expect("body").to_bytes();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tokio::test]
    async fn answers_as_kubes_health_handlers() {
        let h = Health::new();
        let etcd_up = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let up = etcd_up.clone();
        h.add(
            "etcd",
            HEALTH_AND_READY,
            check(move || {
                if up.load(std::sync::atomic::Ordering::Relaxed) {
                    Ok(())
                } else {
                    Err("dial tcp 127.0.0.1:2379: connect: connection refused".into())
                }
            }),
        );
        let hook = h.hook("rbac/bootstrap-roles");

        // Starting: alive, not ready; the reasons stay out of the public answer.
        let live = h.respond(Probe::Livez, None, None).await.expect("livez");
        assert_eq!(body(live).await, (200, "ok".into()));
        let ready = h.respond(Probe::Readyz, None, None).await.expect("readyz");
        assert_eq!(
            body(ready).await,
            (
                500,
                "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n\
                 [-]poststarthook/rbac/bootstrap-roles failed: reason withheld\n\
                 readyz check failed\n"
                    .into()
            )
        );
        // One check, with its reason; an unknown one is no route.
        let one = h.respond(Probe::Readyz, Some("etcd"), None).await.unwrap();
        assert_eq!(
            body(one).await,
            (
                500,
                "internal server error: dial tcp 127.0.0.1:2379: connect: connection refused\n"
                    .into()
            )
        );
        assert!(h.respond(Probe::Readyz, Some("nope"), None).await.is_none());
        assert!(h.respond(Probe::Livez, Some("etcd"), None).await.is_none());
        // Excluded checks pass; unknown exclusions are named.
        let excl = h
            .respond(
                Probe::Readyz,
                None,
                Some("exclude=etcd&exclude=poststarthook/rbac/bootstrap-roles,nope&verbose"),
            )
            .await
            .unwrap();
        assert_eq!(
            body(excl).await,
            (
                200,
                "[+]ping ok\n[+]log ok\n[+]etcd excluded: ok\n\
                 [+]poststarthook/rbac/bootstrap-roles excluded: ok\n\
                 warn: some health checks cannot be excluded: no matches for \"nope\"\n\
                 readyz check passed\n"
                    .into()
            )
        );

        etcd_up.store(true, std::sync::atomic::Ordering::Relaxed);
        hook.done();
        let ready = h.respond(Probe::Readyz, None, None).await.unwrap();
        assert_eq!(body(ready).await, (200, "ok".into()));
        let verbose = h
            .respond(Probe::Healthz, None, Some("verbose"))
            .await
            .unwrap();
        assert_eq!(
            body(verbose).await,
            (
                200,
                "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]poststarthook/rbac/bootstrap-roles ok\n\
                 healthz check passed\n"
                    .into()
            )
        );
        // Replacing a check keeps its place.
        h.add("etcd", HEALTH_AND_READY, check(|| Err("gone".into())));
        assert_eq!(
            h.names(),
            ["ping", "log", "etcd", "poststarthook/rbac/bootstrap-roles"]
        );
        assert_eq!(h.failing(Probe::Readyz).await, ["etcd"]);
    }

    #[test]
    fn paths_name_a_probe_and_a_check() {
        assert_eq!(Probe::of_path("/readyz"), Some((Probe::Readyz, None)));
        assert_eq!(
            Probe::of_path("/readyz/etcd"),
            Some((Probe::Readyz, Some("etcd")))
        );
        assert_eq!(
            Probe::of_path("/livez/poststarthook/rbac/bootstrap-roles"),
            Some((Probe::Livez, Some("poststarthook/rbac/bootstrap-roles")))
        );
        assert_eq!(Probe::of_path("/healthz/"), Some((Probe::Healthz, None)));
        assert_eq!(Probe::of_path("/version"), None);
    }
}
