//! What the end-to-end benchmarks share: the real binary started as a child process in its own
//! data directory, and its memory read from /proc.

// Each bench target compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A running `karmada-rs` process; killed when dropped, its data directory removed.
pub struct Process {
    pub child: Child,
    pub kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `karmada-rs ARGS --data-dir TEMP` and waits for the line starting with
/// `ready_prefix` it prints once it serves; `kubeconfig` is the file it writes in its data
/// directory. `wrapper` runs it under another command (a profiler such as `heaptrack -o F`).
pub fn spawn(
    args: &[&str],
    ready_prefix: &str,
    kubeconfig: &str,
    wrapper: Option<&str>,
) -> Process {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut command = match wrapper.map(str::split_whitespace) {
        Some(mut w) => {
            let mut c = Command::new(w.next().expect("a wrapper command"));
            c.args(w).arg(env!("CARGO_BIN_EXE_karmada-rs"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_karmada-rs")),
    };
    let mut child = command
        .args(args)
        .arg("--data-dir")
        .arg(dir.path())
        .env("KARMADA_RS_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn karmada-rs");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    loop {
        match lines.next() {
            Some(Ok(l)) if l.starts_with(ready_prefix) => break,
            Some(_) => continue,
            None => panic!("karmada-rs exited before it was ready"),
        }
    }
    std::thread::spawn(move || for _ in lines {});
    Process {
        child,
        kubeconfig: dir.path().join(kubeconfig),
        _dir: dir,
    }
}

/// Resident set of a process in KiB (0 when it is gone).
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}
