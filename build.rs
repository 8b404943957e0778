//! Lays out the release binary's code so that what runs at start and at idle sits together.
//!
//! The kernel maps a binary's code 64 KiB around each first touch, so the few MB of functions
//! a starting server runs, scattered over about 32 MB of text, made about 20 MiB of its idle
//! RSS. `startup.symbols` lists those functions (recorded by `scripts/symbol-order`); the
//! linker places them first. A name that no longer exists (code changed since the recording)
//! is skipped, so a stale list only costs memory, never correctness.

use std::path::Path;
use std::process::Command;

fn main() {
    let order = Path::new(env!("CARGO_MANIFEST_DIR")).join("startup.symbols");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-changed=build.rs");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    if release && order.exists() && links_with_lld() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        // Names of code changed since the recording are expected; lld would warn per name.
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// Rust links x86_64 Linux binaries with its bundled lld from 1.90 on; the option is lld's.
fn links_with_lld() -> bool {
    if std::env::var("TARGET").ok().as_deref() != Some("x86_64-unknown-linux-gnu") {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    // "rustc 1.95.0 (...)"
    let version = String::from_utf8_lossy(&out.stdout);
    let minor = version
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok());
    minor.is_some_and(|m| m >= 90)
}
