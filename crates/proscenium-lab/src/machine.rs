//! The machine and the versions of what ran, for the report.

use std::collections::BTreeMap;
use std::process::Command;

use serde::{Deserialize, Serialize};

/// What the results were measured on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// The CPU's model name.
    pub cpu: String,
    /// Cores available to the lab.
    pub cores: usize,
    /// Memory in GiB.
    pub memory_gib: f64,
    /// The kernel release.
    pub kernel: String,
}

impl Machine {
    pub(crate) fn read() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let field = |text: &str, key: &str| {
            text.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split(':').nth(1))
                .map(|v| v.trim().to_owned())
                .unwrap_or_default()
        };
        let mem_kib: f64 = field(&meminfo, "MemTotal")
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        Self {
            cpu: field(&cpuinfo, "model name"),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            memory_gib: (mem_kib / 1024.0 / 1024.0 * 10.0).round() / 10.0,
            kernel: nix::sys::utsname::uname()
                .map(|u| u.release().to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }
}

/// The first line each tool prints of its version, for those present.
pub(crate) fn versions(vegeta: Option<&std::path::Path>) -> BTreeMap<String, String> {
    let vegeta = vegeta.map_or("vegeta".into(), |p| p.display().to_string());
    let probes: [(&str, &[&str]); 8] = [
        ("rustc", &["rustc", "--version"]),
        ("nginx", &["nginx", "-v"]),
        ("apache2", &["apache2", "-v"]),
        ("java", &["java", "-version"]),
        ("node", &["node", "--version"]),
        ("wrk", &["wrk", "--version"]),
        ("vegeta", &[&vegeta, "-version"]),
        ("go", &["go", "version"]),
    ];
    let mut found = BTreeMap::from([(
        "proscenium".to_owned(),
        env!("CARGO_PKG_VERSION").to_owned(),
    )]);
    found.extend(crate::servers::jvm_peer_versions());
    for (name, argv) in probes {
        if let Ok(out) = Command::new(argv[0]).args(&argv[1..]).output() {
            let text = String::from_utf8_lossy(if out.stdout.is_empty() {
                &out.stderr
            } else {
                &out.stdout
            })
            .into_owned();
            // vegeta prints `Version: X` (empty when built by `go install`).
            let line = text
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.ends_with(':'));
            if let Some(line) = line {
                found.insert(name.to_owned(), line.trim().to_owned());
            }
        }
    }
    found
}
