//! Processes the lab starts: servers in process groups of their own, stopped by pid
//! whatever happens (drop stops them), and what they spend — CPU time and resident
//! memory of the whole process tree, from `/proc`.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::Error;

/// How long a stopped server gets to exit before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// How often resident memory is sampled during a step.
const RSS_SAMPLE: Duration = Duration::from_millis(100);

/// A server process group, stopped when dropped.
#[derive(Debug)]
pub(crate) struct Running {
    child: Child,
    command: String,
}

impl Running {
    /// Starts `command` in a new process group, its output discarded (a server that
    /// fails shows as one that never answers, and is skipped with that reason).
    pub(crate) fn spawn(name: &str, mut command: Command) -> Result<Self, Error> {
        let shown = format!("{command:?}").replace('"', "");
        let child = command
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| Error::Start {
                server: name.to_owned(),
                reason: format!("{shown}: {e}"),
            })?;
        Ok(Self {
            child,
            command: shown,
        })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The command line, for the report.
    pub(crate) fn command(&self) -> &str {
        &self.command
    }

    /// Whether it has exited already (it crashed or could not bind).
    pub(crate) fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Stops the group: SIGTERM, then SIGKILL after the grace period.
    pub(crate) fn stop(&mut self) {
        let Ok(pid) = i32::try_from(self.child.id()) else {
            return;
        };
        let group = Pid::from_raw(pid);
        let _ = killpg(group, Signal::SIGTERM);
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if self.has_exited() && killpg(group, None).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = killpg(group, Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The pids of `root` and all its descendants.
fn tree(root: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            if let Some(ppid) = stat_fields(pid).and_then(|f| f.get(1)?.parse().ok()) {
                parents.push((pid, ppid));
            }
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        i += 1;
    }
    found
}

/// The fields of `/proc/PID/stat` after the command name (state is field 0).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    Some(after_name.split(' ').map(str::to_owned).collect())
}

/// CPU time (user + system, every thread) of `root`'s process tree, in seconds: of the
/// processes in it now, and of those they waited for (a CGI script a request).
pub(crate) fn tree_cpu_seconds(root: u32) -> f64 {
    let ticks: u64 = tree(root)
        .into_iter()
        .filter_map(stat_fields)
        .map(|f| {
            // utime, stime, cutime and cstime (the children waited for) are fields 14
            // to 17 of stat, 11 to 14 after the name. A child still running counts in
            // its own fields, and once waited for in its parent's: never twice.
            let field = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            (11..=14).map(field).sum::<u64>()
        })
        .sum();
    seconds(ticks)
}

/// CPU time (user + system) of this process's children it has waited for, in
/// seconds: around a generator run with `output()`, the generator's.
pub(crate) fn waited_children_cpu_seconds() -> f64 {
    let ticks = stat_fields(std::process::id()).map_or(0, |f| {
        // cutime and cstime: fields 16 and 17 of stat, 13 and 14 after the name.
        let field = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        field(13) + field(14)
    });
    seconds(ticks)
}

/// `ticks` of the kernel's clock, in seconds.
fn seconds(ticks: u64) -> f64 {
    let ticks_per_second = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100);
    ticks as f64 / ticks_per_second as f64
}

/// Resident memory of `root`'s process tree, in KiB.
fn tree_rss_kib(root: u32) -> u64 {
    tree(root)
        .into_iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .filter_map(|status| {
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .sum()
}

/// Samples a process tree's resident memory until dropped; keeps the peak.
pub(crate) struct RssPeak {
    peak: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl RssPeak {
    pub(crate) fn watch(root: u32) -> Self {
        let peak = Arc::new(AtomicU64::new(tree_rss_kib(root)));
        let done = Arc::new(AtomicBool::new(false));
        let thread = {
            let (peak, done) = (peak.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    peak.fetch_max(tree_rss_kib(root), Ordering::Relaxed);
                    std::thread::sleep(RSS_SAMPLE);
                }
            })
        };
        Self {
            peak,
            done,
            thread: Some(thread),
        }
    }

    /// Stops sampling; returns the peak in KiB.
    pub(crate) fn finish(mut self) -> u64 {
        self.stop();
        self.peak.load(Ordering::Relaxed)
    }

    fn stop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RssPeak {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_tree_is_measured_and_stopped_whole() {
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 30 & sleep 30 & wait"]);
        let mut running = Running::spawn("sh", command).unwrap();
        let root = running.pid();
        let deadline = Instant::now() + Duration::from_secs(5);
        while tree(root).len() < 3 {
            assert!(Instant::now() < deadline, "children did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        let children = tree(root);
        assert!(tree_rss_kib(root) > 0);
        assert!(tree_cpu_seconds(root) >= 0.0);
        running.stop();
        for pid in children {
            assert!(
                stat_fields(pid).is_none_or(|f| f[0] == "Z"),
                "{pid} left behind"
            );
        }
    }

    #[test]
    fn the_cpu_of_children_waited_for_counts() {
        let mut command = Command::new("sh");
        command.args([
            "-c",
            "(i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done); sleep 30",
        ]);
        let running = Running::spawn("sh", command).unwrap();
        let root = running.pid();
        let deadline = Instant::now() + Duration::from_secs(20);
        // The busy subshell is gone once sh runs sleep: its time is then sh's.
        while !tree(root)
            .iter()
            .filter_map(|&pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).ok())
            .any(|name| name.trim() == "sleep")
        {
            assert!(Instant::now() < deadline, "the subshell did not finish");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(tree_cpu_seconds(root) >= 0.3, "{}", tree_cpu_seconds(root));
    }

    #[test]
    fn a_generators_cpu_is_the_time_its_waited_for_children_gained() {
        let before = waited_children_cpu_seconds();
        let busy = Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(busy.success());
        // At least the loop's time: other tests' children may add theirs.
        let spent = waited_children_cpu_seconds() - before;
        assert!(spent >= 0.3, "{spent}");
    }
}
