//! A decoupled connector across processes, through a Redis of the bench's own: a
//! source in this process sends timestamped events to a sink stage run by 1, 2 and 4
//! other processes (one consumer group; each event to one of them). Events per second
//! end to end — from the first send until the group has acknowledged the last — and
//! the hop's p50 and p99 (send to the sink's handler, wall clock: one host), saturated
//! and paced at 10,000 events a second (those due sent each millisecond); beside the same graph in one process and
//! `redis-benchmark`'s raw pipelined XADD rate on the same Redis. Prints a markdown
//! table; then Redis's own time per event by command (`INFO commandstats`) in the raw
//! XADD run and in the saturated run with the sink in one other process, and the CPU
//! Redis spent per event in each (its `/proc` times): what one event costs Redis end
//! to end against what an append costs it. Run by `bench/stages-remote.sh`.
//!
//! `stage-remote sink GRAPH PROCESS URL FILE` is one sink process: it runs until
//! SIGTERM, then writes its hops (nanoseconds, one a line) to FILE.

use std::collections::HashMap;
use std::io::{BufRead as _, Write as _};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use proscenium::stage::{
    Admission, ClusterSpec, Connector, Graph, Mapping, Out, RunningGraph, Stage, StopSignal,
};
use proscenium::testing::Redis;

const EVENTS: u64 = 200_000;
const PACE: f64 = 10_000.0;
/// Events of the paced runs: two seconds' worth.
const PACED_EVENTS: u64 = 20_000;

/// Nanoseconds of the wall clock: comparable across the processes of one host.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The graph every process builds: `source` (cluster `front`) sends `events` wall-clock
/// stamps, at `pace` a second if given, to `sink` (cluster `back`), which records each
/// one's hop in `hops`.
fn graph(events: u64, pace: Option<f64>, hops: Arc<Mutex<Vec<u64>>>) -> Graph {
    let stamps = Out::<u64>::new("stamps");
    let out = stamps.clone();
    let mut graph = Graph::new();
    let source = graph.stage(
        Stage::source(
            "source",
            || (),
            move |(), ctx| {
                // Paced, the events due are sent each millisecond and the thread
                // sleeps between: a source spinning for its pace took a core of two.
                let started = Instant::now();
                let mut sent = 0;
                while sent < events {
                    let due = pace.map_or(events, |rate| {
                        ((started.elapsed().as_secs_f64() * rate) as u64 + 1).min(events)
                    });
                    while sent < due {
                        ctx.send(&out, now())?;
                        sent += 1;
                    }
                    if pace.is_some() {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                Ok(())
            },
        )
        .output(&stamps),
    );
    let sink = graph.stage(Stage::stateful(
        "sink",
        || (),
        move |(), sent: u64, _| {
            let hop = now().saturating_sub(sent);
            hops.lock().expect("no sink panics").push(hop);
            Ok(())
        },
    ));
    let connector = Connector::decoupled().admission(Admission::Block);
    graph.connect(&source, "stamps", &sink, connector);
    graph.part([("front", (&source).into()), ("back", (&sink).into())]);
    graph
}

fn clusters() -> HashMap<String, ClusterSpec> {
    let two = ClusterSpec {
        threads: Some(2),
        ..ClusterSpec::default()
    };
    HashMap::from([("front".to_owned(), two.clone()), ("back".to_owned(), two)])
}

fn mapping(graph: &str, process: &str, cluster: &str, url: &str) -> Mapping {
    Mapping {
        graph: graph.to_owned(),
        process: process.to_owned(),
        clusters: vec![cluster.to_owned()],
        redis: url.into(),
        claim_idle: Duration::from_secs(30),
        max_deliveries: 5,
    }
}

/// One sink process: runs `back` until stopped, then writes its hops to `file`.
fn sink(graph_name: &str, process: &str, url: &str, file: &str) {
    let stop = StopSignal::watch().expect("signals are watched");
    let hops = Arc::new(Mutex::new(Vec::new()));
    let running = graph(0, None, Arc::clone(&hops))
        .start_mapped(&clusters(), &mapping(graph_name, process, "back", url))
        .expect("the sink starts");
    println!("ready");
    stop.wait();
    running.shutdown(Duration::from_secs(5));
    let mut out = std::io::BufWriter::new(std::fs::File::create(file).expect("hops file"));
    for hop in hops.lock().expect("no sink panics").iter() {
        writeln!(out, "{hop}").expect("hops written");
    }
}

/// What one configuration measured.
struct Measured {
    per_second: f64,
    hops: Vec<u64>,
}

impl Measured {
    fn quantile(&self, q: f64) -> Duration {
        let at = ((self.hops.len() as f64 * q) as usize).min(self.hops.len().saturating_sub(1));
        Duration::from_nanos(self.hops.get(at).copied().unwrap_or(0))
    }
}

/// The group's acknowledged entries of `stream`.
fn acknowledged(redis: &mut redis::Connection, stream: &str) -> u64 {
    let groups: redis::RedisResult<redis::streams::StreamInfoGroupsReply> =
        redis::cmd("XINFO").arg("GROUPS").arg(stream).query(redis);
    groups
        .ok()
        .and_then(|g| g.groups.into_iter().next())
        .map_or(0, |g| {
            (g.entries_read.unwrap_or(0).saturating_sub(g.pending)) as u64
        })
}

/// Runs the source here and the sink in `processes` processes.
fn across(redis: &Redis, processes: usize, events: u64, pace: Option<f64>) -> Measured {
    let name = format!("bench-{processes}-{}", pace.is_some());
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let exe = std::env::current_exe().expect("this binary");
    let files: Vec<_> = (0..processes)
        .map(|n| scratch.path().join(format!("hops-{n}")))
        .collect();
    let mut sinks: Vec<Child> = files
        .iter()
        .enumerate()
        .map(|(n, file)| {
            Command::new(&exe)
                .args(["sink", &name, &format!("p{n}"), &redis.url()])
                .arg(file)
                .stdout(Stdio::piped())
                .spawn()
                .expect("a sink process")
        })
        .collect();
    // Every sink has started its graph before the clock starts.
    for sink in &mut sinks {
        let out = sink.stdout.as_mut().expect("piped");
        let mut line = String::new();
        std::io::BufReader::new(out)
            .read_line(&mut line)
            .expect("the sink says it is ready");
    }
    let stream = format!("{name}:source.stamps:sink");
    let mut connection = redis::Client::open(redis.url())
        .and_then(|c| c.get_connection())
        .expect("redis");
    let started = Instant::now();
    let running = graph(events, pace, Arc::new(Mutex::new(Vec::new())))
        .start_mapped(
            &clusters(),
            &mapping(&name, "driver", "front", &redis.url()),
        )
        .expect("the source starts");
    while acknowledged(&mut connection, &stream) < events {
        std::thread::sleep(Duration::from_micros(200));
    }
    let elapsed = started.elapsed();
    running.shutdown(Duration::from_secs(5));
    for mut sink in sinks {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(sink.id()).expect("a pid"));
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = sink.wait();
    }
    let mut hops: Vec<u64> = files
        .iter()
        .flat_map(|file| {
            std::fs::read_to_string(file)
                .expect("the sink wrote its hops")
                .lines()
                .map(|l| l.parse::<u64>().expect("a hop"))
                .collect::<Vec<_>>()
        })
        .collect();
    hops.sort_unstable();
    Measured {
        per_second: events as f64 / elapsed.as_secs_f64(),
        hops,
    }
}

/// The same graph in one process, its clusters joined by an in-memory decoupled
/// connector.
fn in_one_process(events: u64, pace: Option<f64>) -> Measured {
    let hops = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let running: RunningGraph = graph(events, pace, Arc::clone(&hops))
        .start(&clusters())
        .expect("the graph starts");
    while (hops.lock().expect("no sink panics").len() as u64) < events {
        std::thread::sleep(Duration::from_micros(200));
    }
    let elapsed = started.elapsed();
    running.shutdown(Duration::from_secs(5));
    let mut hops = std::mem::take(&mut *hops.lock().expect("no sink panics"));
    hops.sort_unstable();
    Measured {
        per_second: events as f64 / elapsed.as_secs_f64(),
        hops,
    }
}

/// Redis's command statistics since the last reset: microseconds by command.
fn command_times(redis: &Redis) -> Vec<(String, f64)> {
    let mut connection = redis::Client::open(redis.url())
        .and_then(|c| c.get_connection())
        .expect("redis");
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut connection)
        .expect("INFO answers");
    // "cmdstat_xadd:calls=200000,usec=78000,usec_per_call=0.39,..."
    info.lines()
        .filter_map(|line| {
            let (name, stats) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let usec = stats
                .split(',')
                .find_map(|kv| kv.strip_prefix("usec="))?
                .parse()
                .ok()?;
            Some((name.to_owned(), usec))
        })
        .collect()
}

/// Resets Redis's command statistics; returns the CPU time (user and system) its
/// process has spent so far.
fn reset_stats(redis: &Redis) -> Duration {
    let mut connection = redis::Client::open(redis.url())
        .and_then(|c| c.get_connection())
        .expect("redis");
    let () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut connection)
        .expect("CONFIG RESETSTAT answers");
    redis_cpu(redis)
}

/// The CPU time Redis's process has spent: its `/proc/PID/stat` user and system
/// clock ticks (a hundredth of a second here).
fn redis_cpu(redis: &Redis) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", redis.pid())).expect("/proc");
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .expect("a stat line")
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    Duration::from_millis(ticks * 10)
}

/// Prints a row of Redis's time per event: by command (`times`, microseconds), in
/// all, and its CPU time `cpu`, over `events`.
fn print_cost(label: &str, times: &[(String, f64)], cpu: Duration, events: u64) {
    let per_event = |usec: f64| usec / events as f64;
    let mut times = times.to_vec();
    times.retain(|(name, _)| name != "config|resetstat");
    times.sort_by(|a, b| b.1.total_cmp(&a.1));
    let commands: f64 = times.iter().map(|(_, usec)| usec).sum();
    let by_command: Vec<String> = times
        .iter()
        .filter(|(_, usec)| per_event(*usec) >= 0.005)
        .map(|(name, usec)| format!("{} {:.2}", name.to_uppercase(), per_event(*usec)))
        .collect();
    println!(
        "| {label} | {} | {:.2} | {:.2} |",
        by_command.join(", "),
        per_event(commands),
        cpu.as_secs_f64() * 1e6 / events as f64,
    );
}

/// `redis-benchmark`'s XADD rate, one client pipelining `BATCH` commands as the
/// connector's writer does.
fn raw_xadd(redis: &Redis) -> f64 {
    let output = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &redis.port().to_string()])
        .args(["-c", "1", "-P", "256", "-n", &EVENTS.to_string(), "-q"])
        .args(["XADD", "raw", "*", "e", "0123456789"])
        .output()
        .expect("redis-benchmark runs");
    let text = String::from_utf8_lossy(&output.stdout);
    // "XADD raw * e 0123456789: 512820.50 requests per second, p50=..."
    text.rsplit('\r')
        .find_map(|part| part.split(": ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("redis-benchmark said: {text}"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, role, graph, process, url, file] = args.as_slice()
        && role == "sink"
    {
        sink(graph, process, url, file);
        return;
    }
    let redis = Redis::start();
    let raw_cpu = reset_stats(&redis);
    let raw = raw_xadd(&redis);
    let raw_costs = (command_times(&redis), redis_cpu(&redis) - raw_cpu);
    println!("Redis: raw XADD, one client pipelining 256: {raw:.0} a second\n");
    println!(
        "| sink in | events/s | ÷ raw XADD | p50 hop | p99 hop | p50 at {PACE:.0}/s | p99 at {PACE:.0}/s |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let row = |label: &str, saturated: &Measured, paced: &Measured| {
        println!(
            "| {label} | {:.0} | {:.2} | {:?} | {:?} | {:?} | {:?} |",
            saturated.per_second,
            saturated.per_second / raw,
            saturated.quantile(0.5),
            saturated.quantile(0.99),
            paced.quantile(0.5),
            paced.quantile(0.99),
        );
    };
    row(
        "this process",
        &in_one_process(EVENTS, None),
        &in_one_process(PACED_EVENTS, Some(PACE)),
    );
    let mut one_process = None;
    for processes in [1, 2, 4] {
        let cpu_then = reset_stats(&redis);
        let saturated = across(&redis, processes, EVENTS, None);
        if processes == 1 {
            one_process = Some((command_times(&redis), redis_cpu(&redis) - cpu_then));
        }
        let paced = across(&redis, processes, PACED_EVENTS, Some(PACE));
        row(
            &format!("{processes} other process(es)"),
            &saturated,
            &paced,
        );
    }
    println!("\nRedis's time per event, µs (INFO commandstats; CPU from /proc):\n");
    println!("| run | by command | commands | Redis CPU |");
    println!("|---|---|---:|---:|");
    for (label, (times, cpu)) in [
        ("raw XADD (redis-benchmark)", raw_costs),
        (
            "sink in 1 other process, saturated",
            one_process.expect("measured"),
        ),
    ] {
        print_cost(label, &times, cpu, EVENTS);
    }
}
