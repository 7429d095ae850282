//! Where, when and how a run was made, so a reader can trust and rerun it: the date,
//! the commit of the checkout, the exact command, the rounds, the CPU split and every
//! step's targets. `results.json` files written before it have none (`null`: not
//! recorded).

use std::path::Path;
use std::process::Command;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// What a run records about its own making.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// When the run started, UTC, as `YYYY-MM-DDTHH:MM:SSZ`.
    pub date: String,
    /// The commit of the checkout the servers were built from (with ` (modified)` when
    /// it had uncommitted changes), or `not a checkout`.
    pub commit: String,
    /// The `proscenium bench` command line, as typed.
    pub command: String,
    /// How many rounds ran: every server's steps once a round, interleaved.
    pub rounds: u32,
    /// The cores the servers ran on (`taskset -c`).
    pub server_cpus: String,
    /// The cores the load generator ran on.
    pub load_cpus: String,
    /// Each step (`group / label`), in the plan's order, and what it sent:
    /// `k × METHOD /path` in turn.
    pub targets: IndexMap<String, Vec<String>>,
}

/// The time now, UTC.
pub(crate) fn now() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc(seconds)
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc(seconds: u64) -> String {
    let t = i64::try_from(seconds)
        .ok()
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// The commit checked out at `root`, or `not a checkout`.
pub(crate) fn commit_of(root: &Path) -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    match git(&["rev-parse", "HEAD"]) {
        Some(commit) if !commit.is_empty() => {
            let modified = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if modified {
                format!("{commit} (modified)")
            } else {
                commit
            }
        }
        _ => "not a checkout".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_civil_times() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_868_800), "2000-03-01T00:00:00Z");
        assert_eq!(utc(1_795_460_645), "2026-11-23T19:04:05Z");
    }

    #[test]
    fn a_directory_outside_git_is_not_a_checkout() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(commit_of(dir.path()), "not a checkout");
    }
}
