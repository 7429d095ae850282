//! Shared state over real sockets: writes never lost, check-then-insert atomic,
//! readers sharing and writers excluding, opposite declaration orders without deadlock,
//! a writer not starved by readers, locks released by a panic, and the route classes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use proscenium::state::{Counter, Read, SharedMap, Then, Write};
use proscenium::{App, Path, Server, blocking, inline};

use crate::support::{self, Client};

/// Sends `n` requests for `path` on one keep-alive connection; returns the statuses.
fn hammer(addr: SocketAddr, method: &str, path: &str, n: usize) -> Vec<u16> {
    let mut client = Client::connect(addr);
    (0..n)
        .map(|_| {
            client
                .send(format!(
                    "{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"
                ))
                .response()
                .status
        })
        .collect()
}

/// Runs `clients` threads, each sending `each` requests for one of `paths` in turn.
fn concurrently(addr: SocketAddr, method: &str, paths: &[&str], clients: usize, each: usize) {
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let (method, path) = (method.to_owned(), paths[i % paths.len()].to_owned());
            thread::spawn(move || hammer(addr, &method, &path, each))
        })
        .collect();
    for t in threads {
        assert!(t.join().unwrap().iter().all(|&s| s == 200));
    }
}

#[test]
fn ten_thousand_concurrent_increments_count_exactly_ten_thousand() {
    support::in_process("state its handlers share with it");
    // Each writer reads, gives the scheduler a chance to run others, then writes: a
    // lost update would show if two ever held the counter at once.
    let app = App::new()
        .state(Counter::default())
        .post(
            "/inline",
            inline(|mut c: Write<Counter>| {
                let v = c.get();
                c.set(v + 1);
            }),
        )
        .post("/async", |mut c: Write<Counter>| async move {
            let v = c.get();
            tokio::task::yield_now().await;
            c.set(v + 1);
        })
        .post(
            "/blocking",
            blocking(|mut c: Write<Counter>| {
                let v = c.get();
                thread::yield_now();
                c.set(v + 1);
            }),
        )
        .get("/count", inline(|c: Read<Counter>| c.get().to_string()));
    let server = support::start(app);
    let addr = server.local_addr();
    concurrently(addr, "POST", &["/inline", "/async", "/blocking"], 20, 500);
    assert_eq!(support::get(addr, "/count").text(), "10000");
}

#[test]
fn check_then_insert_computes_a_value_once() {
    support::in_process("state its handlers share with it");
    fn lookup(Path(key): Path<u64>, cache: Read<SharedMap<u64, u64>>) -> Then<String> {
        match cache.get(&key) {
            Some(v) => Then::Done(v.to_string()),
            None => cache.then(blocking(
                move |mut cache: Write<SharedMap<u64, u64>>, mut computed: Write<Counter>| {
                    cache
                        .get_or_insert_with(key, || {
                            computed.increment();
                            thread::sleep(Duration::from_millis(50));
                            key * 2
                        })
                        .to_string()
                },
            )),
        }
    }
    let app = App::new()
        .state(SharedMap::<u64, u64>::new())
        .state(Counter::default())
        .get("/value/:key", inline(lookup))
        .get("/computed", inline(|c: Read<Counter>| c.get().to_string()));
    let server = support::start(app);
    let addr = server.local_addr();
    let answers: Vec<String> = (0..16)
        .map(|_| thread::spawn(move || support::get(addr, "/value/21").text()))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    assert!(answers.iter().all(|a| a == "42"), "{answers:?}");
    assert_eq!(support::get(addr, "/computed").text(), "1");
}

/// Who is inside the state now, and whether anyone ever broke the rules.
#[derive(Default)]
struct Occupancy {
    readers: AtomicUsize,
    writers: AtomicUsize,
    most_readers: AtomicUsize,
    broken: AtomicBool,
}

impl Occupancy {
    fn enter(&self, writing: bool) {
        if writing {
            let others = self.writers.fetch_add(1, Ordering::SeqCst) > 0
                || self.readers.load(Ordering::SeqCst) > 0;
            self.broken.fetch_or(others, Ordering::SeqCst);
        } else {
            let now = self.readers.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_readers.fetch_max(now, Ordering::SeqCst);
            self.broken
                .fetch_or(self.writers.load(Ordering::SeqCst) > 0, Ordering::SeqCst);
        }
    }

    fn leave(&self, writing: bool) {
        let count = if writing {
            &self.writers
        } else {
            &self.readers
        };
        count.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An app whose `/read` and `/write` hold their lock for `hold` while recording who is
/// inside.
fn occupancy_app(hold: Duration) -> (App, Arc<Occupancy>) {
    let inside = Arc::new(Occupancy::default());
    let (r, w) = (inside.clone(), inside.clone());
    let app = App::new()
        .state(Counter::default())
        // The guard moves into the async block, which holds it while the work runs.
        .get("/read", move |c: Read<Counter>| {
            let inside = r.clone();
            async move {
                let _held = c;
                inside.enter(false);
                tokio::time::sleep(hold).await;
                inside.leave(false);
            }
        })
        .post("/write", move |c: Write<Counter>| {
            let inside = w.clone();
            async move {
                let _held = c;
                inside.enter(true);
                tokio::time::sleep(hold).await;
                inside.leave(true);
            }
        });
    (app, inside)
}

#[test]
fn readers_share_and_a_writer_excludes_readers_and_writers() {
    support::in_process("state its handlers share with it");
    let (app, inside) = occupancy_app(Duration::from_millis(100));
    let server = support::start(app);
    let addr = server.local_addr();
    // Two readers alone: both inside at once.
    concurrently(addr, "GET", &["/read"], 2, 1);
    assert_eq!(
        inside.most_readers.load(Ordering::SeqCst),
        2,
        "reads overlap"
    );
    // Readers and writers mixed: never a writer with anyone.
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let (method, path) = if i % 3 == 0 {
                ("POST", "/write")
            } else {
                ("GET", "/read")
            };
            thread::spawn(move || hammer(addr, method, path, 3))
        })
        .collect();
    for t in threads {
        assert!(t.join().unwrap().iter().all(|&s| s == 200));
    }
    assert!(
        !inside.broken.load(Ordering::SeqCst),
        "a writer shared the state"
    );
}

#[test]
fn a_writer_gets_in_under_a_continuous_stream_of_readers() {
    support::in_process("what its handlers record");
    let (app, inside) = occupancy_app(Duration::from_millis(5));
    let server = support::start(app);
    let addr = server.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..8)
        .map(|_| {
            let stop = stop.clone();
            thread::spawn(move || {
                let mut client = Client::connect(addr);
                while !stop.load(Ordering::SeqCst) {
                    assert_eq!(client.get("/read").response().status, 200);
                }
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(200));
    let began = Instant::now();
    let status = hammer(addr, "POST", "/write", 1)[0];
    let waited = began.elapsed();
    stop.store(true, Ordering::SeqCst);
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(status, 200);
    // The bound: the readers inside when the writer queued, each 5 ms; seconds would
    // mean starvation.
    assert!(waited < Duration::from_secs(2), "writer waited {waited:?}");
    assert!(!inside.broken.load(Ordering::SeqCst));
}

#[derive(Default)]
struct A(u64);
#[derive(Default)]
struct B(u64);

#[test]
fn routes_taking_two_states_in_opposite_orders_never_deadlock() {
    support::in_process("state its handlers share with it");
    let app = App::new()
        .state(A::default())
        .state(B::default())
        .post("/ab", |mut a: Write<A>, mut b: Write<B>| async move {
            a.0 += 1;
            tokio::task::yield_now().await;
            b.0 += 1;
        })
        .post("/ba", |mut b: Write<B>, mut a: Write<A>| async move {
            b.0 += 1;
            tokio::task::yield_now().await;
            a.0 += 1;
        })
        .post(
            "/ba-blocking",
            blocking(|mut b: Write<B>, a: Read<A>| b.0 += a.0 % 2),
        )
        .get(
            "/sums",
            inline(|a: Read<A>, b: Read<B>| format!("{} {}", a.0, b.0)),
        );
    let server = support::start(app);
    let addr = server.local_addr();
    // Ten seconds under the default model, as the issue asks; shorter under the others
    // the suite also runs.
    let seconds = if std::env::var_os("PROSCENIUM_TEST_MODEL").is_none() {
        10
    } else {
        3
    };
    let until = Instant::now() + Duration::from_secs(seconds);
    let answered = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = ["/ab", "/ba", "/ab", "/ba", "/ba-blocking", "/ab"]
        .into_iter()
        .map(|path| {
            let answered = answered.clone();
            thread::spawn(move || {
                let mut client = Client::connect(addr);
                while Instant::now() < until {
                    let res = client
                        .send(format!(
                            "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"
                        ))
                        .response();
                    assert_eq!(res.status, 200);
                    answered.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    assert!(answered.load(Ordering::SeqCst) > 100);
    let sums = support::get(addr, "/sums").text();
    let (a, b) = sums.split_once(' ').unwrap();
    assert!(a.parse::<u64>().unwrap() > 0 && b.parse::<u64>().unwrap() > 0);
}

#[test]
fn a_panicking_writer_releases_its_lock() {
    support::in_process("state its handlers share with it");
    let app = App::new()
        .state(Counter::default())
        .post(
            "/boom",
            inline(|mut c: Write<Counter>| -> &'static str {
                c.increment();
                panic!("deliberate panic while writing");
            }),
        )
        .post("/boom-async", |_c: Write<Counter>| async move {
            tokio::task::yield_now().await;
            panic!("deliberate panic while writing");
            #[allow(unreachable_code)]
            ""
        })
        .post(
            "/inc",
            inline(|mut c: Write<Counter>| c.increment().to_string()),
        );
    let server = support::start(app);
    let addr = server.local_addr();
    assert_eq!(hammer(addr, "POST", "/boom", 1), [500]);
    assert_eq!(hammer(addr, "POST", "/boom-async", 1), [500]);
    let mut client = Client::connect(addr);
    client.send("POST /inc HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    assert!(
        client.has_answer_within(Duration::from_secs(5)),
        "the lock was released"
    );
    assert_eq!(client.response().text(), "2");
}

#[test]
fn a_long_write_is_logged_with_its_route() {
    support::in_process("its log");
    support::capture_logs();
    let app = App::new()
        .state(Counter::default())
        .write_hold_warning(Duration::from_millis(20))
        .post(
            "/slow-write",
            blocking(|mut c: Write<Counter>| {
                thread::sleep(Duration::from_millis(60));
                c.increment().to_string()
            }),
        );
    let server = support::start(app);
    assert_eq!(hammer(server.local_addr(), "POST", "/slow-write", 1), [200]);
    assert!(support::logged_within(
        &["write lock held long", "POST /slow-write"],
        Duration::from_secs(2)
    ));
}

#[test]
fn routes_print_their_class_and_locks() {
    let app = App::new()
        .state(Counter::default())
        .state(SharedMap::<u32, u32>::new())
        .get("/plain", inline(|| "x"))
        .get("/count", inline(|c: Read<Counter>| c.get().to_string()))
        .post(
            "/both",
            inline(|_m: Read<SharedMap<u32, u32>>, _c: Write<Counter>| ""),
        );
    let lines: Vec<String> = app.routes().map(ToString::to_string).collect();
    assert!(lines[0].contains("stateless"), "{}", lines[0]);
    assert!(
        lines[1].contains("reading") && lines[1].contains("Counter (read)"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].contains("writing")
            && lines[2].contains("SharedMap<u32, u32> (read), Counter (write)"),
        "{}",
        lines[2]
    );
}

#[test]
fn a_route_taking_unregistered_state_stops_the_server_at_start() {
    let app = App::new().get("/x", inline(|c: Read<Counter>| c.get().to_string()));
    let err = Server::new(app)
        .bind("127.0.0.1:0".parse().unwrap())
        .start()
        .unwrap_err()
        .to_string();
    assert!(err.contains("GET /x") && err.contains("Counter"), "{err}");
}
