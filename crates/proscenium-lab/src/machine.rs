//! The machine and the versions of what ran (tools, servers, the Rust peers'
//! frameworks), for the report.

use std::collections::BTreeMap;
use std::path::Path;
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

/// The first line each tool prints of its version, for those present, and the web
/// framework of each Rust peer as its `Cargo.lock` under `root` pins it.
pub(crate) fn versions(root: &Path, vegeta: Option<&Path>) -> BTreeMap<String, String> {
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
        if let Some(line) = version_line(name, argv) {
            found.insert(name.to_owned(), line);
        }
    }
    found.extend(rust_peer_frameworks(root));
    found
}

/// The web framework of each Rust peer, as its `Cargo.lock` under `root` pins it.
fn rust_peer_frameworks(root: &Path) -> impl Iterator<Item = (String, String)> + '_ {
    [("actix", "actix-web"), ("hyper", "hyper")]
        .into_iter()
        .filter_map(move |(peer, framework)| {
            let lock = root.join(format!("bench/peers/{peer}/Cargo.lock"));
            let version = locked_version(&lock, framework)?;
            Some((format!("{framework} (peer {peer})"), version))
        })
}

/// The first line `argv` prints of tool `name`'s version (on stdout, or else on
/// stderr), or `None` when it does not run or prints nothing.
fn version_line(name: &str, argv: &[&str]) -> Option<String> {
    let out = Command::new(argv[0]).args(&argv[1..]).output().ok()?;
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
        .find(|l| !l.is_empty() && !l.ends_with(':'))?;
    Some(match line.trim() {
        // A `go install` build knows only its Go runtime: name the release.
        runtime if name == "vegeta" && runtime.starts_with("Runtime:") => {
            format!("{} ({runtime})", crate::tools::VEGETA)
        }
        line => line.to_owned(),
    })
}

/// The version of `package` in the `Cargo.lock` at `lock`.
fn locked_version(lock: &Path, package: &str) -> Option<String> {
    let text = std::fs::read_to_string(lock).ok()?;
    let mut lines = text.lines();
    lines.find(|l| l.trim() == format!("name = \"{package}\""))?;
    let version = lines.next()?.trim().strip_prefix("version = ")?;
    Some(version.trim_matches('"').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peers_frameworks_are_read_off_their_lock_files() {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let lock = root.join("bench/peers/actix/Cargo.lock");
        let version = locked_version(&lock, "actix-web").unwrap();
        assert!(version.starts_with("4."), "{version}");
        assert!(locked_version(&lock, "no-such-crate").is_none());
    }
}
