//! Leda's priority mechanisms on real threads: stages ordered within a cluster
//! (`[clusters.NAME] priority`) and clusters set apart by their threads' nice value.

use std::sync::Arc;

use parking_lot::Mutex;

use super::tests::{DEADLINE, clusters, wait_until};
use super::{Admission, Graph, Stage};

/// Leda's priority mechanism under overload: the cluster's one thread held while events
/// queue for two stages; freed, it runs every turn of the stage of higher priority
/// before any of the other's, whichever came first.
#[test]
fn issue39_under_overload_a_clusters_thread_serves_the_higher_priority_stage_first() {
    let handled = Arc::new(Mutex::new(Vec::new()));
    let (gate, closed) = crossbeam_channel::bounded::<()>(0);
    let recording = |name: &'static str| {
        let handled = handled.clone();
        Stage::stateful(
            name,
            || (),
            move |_, _: u64, _| {
                handled.lock().push(name);
                Ok(())
            },
        )
    };
    let mut graph = Graph::new();
    let hold = graph.stage(Stage::stateful(
        "hold",
        || (),
        move |_, (): (), _| {
            let _ = closed.recv();
            Ok(())
        },
    ));
    let log = graph.stage(recording("log"));
    let answer = graph.stage(recording("answer"));
    let toml = "[clusters.main]\nthreads = 1\n[clusters.main.priority]\nanswer = 5\nhold = 7";
    let running = graph.start(&clusters(toml)).unwrap();
    let held = running.inlet("held", &hold, Admission::Block).unwrap();
    held.send(()).unwrap();
    assert!(wait_until(
        || running.stats().stage("hold").unwrap().queued == 0
    ));
    let to_log = running.inlet("to-log", &log, Admission::Block).unwrap();
    let to_answer = running
        .inlet("to-answer", &answer, Admission::Block)
        .unwrap();
    for n in 0..50u64 {
        to_log.send(n).unwrap();
        to_answer.send(n).unwrap();
    }
    drop(gate);
    assert!(wait_until(|| handled.lock().len() == 100));
    let order = handled.lock().clone();
    let first_log = order.iter().position(|&name| name == "log").unwrap();
    assert_eq!(
        first_log, 50,
        "every answer before the first log line: {order:?}"
    );
    running.shutdown(DEADLINE);
}

/// The nice value of each thread of this process named `name`, from its `stat`.
fn nice_of_threads(name: &str) -> Vec<i64> {
    let tasks = std::fs::read_dir("/proc/self/task").unwrap();
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("stat")).ok())
        .filter_map(|stat| {
            let (comm, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
            // After the name: state, then fields 4 to 19 of proc(5); nice is 19th.
            let nice = rest.split(' ').nth(16)?.parse().ok()?;
            (comm == name).then_some(nice)
        })
        .collect()
}

/// Priority between clusters: a cluster's `nice` is its threads' nice value, which the
/// kernel weighs when the clusters contest a core; the others keep the one of the
/// thread that started them.
#[test]
fn issue39_a_clusters_threads_run_at_its_nice_value() {
    let mut graph = Graph::new();
    graph.stage(Stage::stateful("log", || (), |_, _: u64, _| Ok(())));
    graph.stage(Stage::stateful("answer", || (), |_, _: u64, _| Ok(())));
    let toml = "[clusters.low]\nstages = [\"log\"]\nthreads = 2\nnice = 10\n\
                [clusters.high]\nstages = [\"answer\"]\nthreads = 1";
    let running = graph.start(&clusters(toml)).unwrap();
    assert_eq!(nice_of_threads("stage-low-0"), [10]);
    assert_eq!(nice_of_threads("stage-low-1"), [10]);
    let own = rustix::process::getpriority_process(None).unwrap();
    assert_eq!(nice_of_threads("stage-high-0"), [i64::from(own)]);
    running.shutdown(DEADLINE);
}
