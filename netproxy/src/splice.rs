//! Splicing two upgraded HTTP connections: what a proxy does once both its caller and its
//! backend have switched protocols (kube's `UpgradeAwareHandler` copying bytes both ways after
//! `101 Switching Protocols`). The cluster proxy uses it towards push-mode members and through
//! an agent's tunnel, and the agent towards its member.

use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;

/// Waits for both upgrades, then copies bytes both ways until either side closes.
pub async fn splice(caller: OnUpgrade, backend: OnUpgrade) {
    let (caller, backend) = match tokio::try_join!(caller, backend) {
        Ok(pair) => pair,
        Err(e) => {
            tracing::debug!(error = %e, "upgrade failed");
            return;
        }
    };
    let mut caller = TokioIo::new(caller);
    let mut backend = TokioIo::new(backend);
    if let Err(e) = tokio::io::copy_bidirectional(&mut caller, &mut backend).await {
        tracing::debug!(error = %e, "upgraded connection ended");
    }
}
