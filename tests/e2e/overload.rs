//! Overload ends in answers, never in crashes: past every bound the server sheds load
//! with 503 and `Retry-After`, no connection is reset or left hanging, memory stays
//! bounded, and the server answers normally afterwards.

use std::time::Duration;

use proscenium::App;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support;

/// Connections opened at once.
const CLIENTS: usize = 2000;
/// The test process (clients and server) may grow by at most this much.
const RSS_BOUND_KIB: u64 = 256 * 1024;

pub(crate) fn raise_fd_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    assert!(
        hard >= 2 * CLIENTS as u64 + 256,
        "the hard limit on open files ({hard}) is too low for this test"
    );
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Sends one request on a fresh connection; returns the status, or why there was none.
async fn one_request(addr: std::net::SocketAddr) -> Result<u16, String> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        stream
            .write_all(b"GET /work HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut answer = Vec::new();
        stream
            .read_to_end(&mut answer)
            .await
            .map_err(|e| format!("read: {e}"))?;
        let head = String::from_utf8_lossy(&answer);
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or(format!("no status in {head:?}"))?;
        if status == 503 && !head.to_ascii_lowercase().contains("retry-after: 1\r\n") {
            return Err("503 without Retry-After".to_owned());
        }
        Ok(status)
    };
    tokio::time::timeout(Duration::from_secs(60), exchange)
        .await
        .map_err(|_| "hung".to_owned())?
}

#[test]
fn two_thousand_connections_get_200_or_503_and_the_server_recovers() {
    raise_fd_limit();
    let app = App::new().get("/work", || async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        "done"
    });
    let server = support::start_with(app, |c| {
        c.limits.max_connections = 256;
        c.limits.max_inflight = 32;
        c.thread_queue = 64;
    });
    let addr = server.local_addr();
    let before = rss_kib();
    let clients = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let outcomes: Vec<Result<u16, String>> = clients.block_on(async {
        let tasks: Vec<_> = (0..CLIENTS)
            .map(|_| tokio::spawn(one_request(addr)))
            .collect();
        let mut outcomes = Vec::with_capacity(CLIENTS);
        for task in tasks {
            outcomes.push(task.await.unwrap());
        }
        outcomes
    });
    let grown = rss_kib().saturating_sub(before);
    let failures: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {CLIENTS} failed, e.g. {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    let ok = outcomes.iter().filter(|o| matches!(o, Ok(200))).count();
    let shed = outcomes.iter().filter(|o| matches!(o, Ok(503))).count();
    assert_eq!(ok + shed, CLIENTS, "every answer is 200 or 503");
    assert!(ok > 0, "some work was done");
    assert!(grown < RSS_BOUND_KIB, "memory grew by {grown} KiB");
    assert_eq!(
        support::get(addr, "/work").text(),
        "done",
        "answers normally afterwards"
    );
}

#[test]
fn accepting_pauses_at_the_connection_cap_and_resumes_below_it() {
    support::in_process("a connection cap of the whole server");
    if !support::has_loops() {
        // The thread models bound connections by their threads (and queue) instead.
        return;
    }
    let app = App::new().get("/", proscenium::inline(|| "hi"));
    let server = support::start_with(app, |c| c.limits.max_connections = 2);
    let addr = server.local_addr();
    let mut first = support::Client::connect(addr);
    let second = support::Client::connect(addr);
    assert_eq!(first.get("/").response().text(), "hi");
    let mut third = support::Client::connect(addr);
    third.get("/");
    assert!(
        !third.has_answer_within(Duration::from_millis(300)),
        "the third waits while two are open"
    );
    drop(first);
    assert_eq!(
        third.response().text(),
        "hi",
        "and is served once one closes"
    );
    drop(second);
}
