//! The conformance suite against the embedded store.

mod conformance;

use std::sync::Arc;
use std::time::Duration;

use storage::embedded::{EmbeddedOptions, EmbeddedStore};

async fn harness() -> conformance::Harness {
    let dir = tempfile::tempdir().unwrap();
    let opts = EmbeddedOptions {
        progress_interval: Duration::from_millis(100),
        ..EmbeddedOptions::default()
    };
    let store: Arc<EmbeddedStore> = EmbeddedStore::open(dir.path(), opts).unwrap();
    conformance::Harness {
        store,
        guard: Box::new(dir),
    }
}

conformance_suite!(harness);
