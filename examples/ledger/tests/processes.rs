//! The ledger over three processes (`configs/three-processes.toml`, a Redis of the
//! test's own): 100,000 payments fed straight into its entry's stream, and the `check`
//! process killed (SIGKILL) mid-run. Its supervisor starts it again; what the killed
//! one held is claimed and checked again; and `book`, idempotent by id, books every
//! payment exactly once — count and sum. Without the deduplication the same run books
//! each payment at least once: none missing, some twice.

use std::collections::BTreeMap;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proscenium::stream::StreamSender;
use proscenium::testing::{Redis, process_of};
use serde::{Deserialize, Serialize};

const PAYMENTS: u64 = 100_000;

/// The ledger's payment, as the test writes it into the entry's stream.
#[derive(Serialize, Deserialize)]
struct Payment {
    id: u64,
    cents: i64,
}

fn cents(id: u64) -> i64 {
    i64::try_from(id % 997).unwrap() + 1
}

/// The booked payments in `out`: how many times each id was booked, and the sum.
fn booked(out: &Path) -> (BTreeMap<u64, u32>, i64) {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    let mut times = BTreeMap::new();
    let mut sum = 0;
    // The last line may be half written.
    for line in text
        .lines()
        .filter(|l| l.ends_with(|c: char| c.is_ascii_digit()))
    {
        let Some((id, cents)) = line.split_once(' ') else {
            continue;
        };
        *times.entry(id.parse().unwrap()).or_default() += 1;
        sum += cents.parse::<i64>().unwrap();
    }
    (times, sum)
}

/// Runs the ledger over three processes on all the payments, killing `check` once a
/// fiftieth are booked — early, while `check` surely still holds payments it sent on
/// but has not acknowledged (killed once a fifth were booked, it had once finished
/// them all, on a machine busy with a build) — and returns what was booked once they
/// all are.
fn killed_mid_run(dedup: bool) -> (BTreeMap<u64, u32>, i64) {
    let redis = Redis::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("book.txt");
    let config = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("configs/three-processes.toml");
    let mut ledger = Command::new(env!("CARGO_BIN_EXE_ledger"));
    ledger
        .arg("--config")
        .arg(config)
        .arg("--out")
        .arg(&out)
        .args(["--bind", "127.0.0.1:0"])
        .env("PROSCENIUM_REDIS_URL", redis.url())
        // What the killed process held is claimed a second after.
        .env("PROSCENIUM_REDIS_CLAIM_IDLE", "1")
        .stdout(Stdio::piped());
    if !dedup {
        ledger.arg("--no-dedup");
    }
    let mut ledger = ledger.spawn().unwrap();
    let mut lines = std::io::BufReader::new(ledger.stdout.take().unwrap()).lines();
    while !lines.next().unwrap().unwrap().contains(" serving ") {}
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut entry = StreamSender::connect(&redis.url(), "ledger:entry:payments:check")
            .await
            .unwrap();
        let ids: Vec<u64> = (0..PAYMENTS).collect();
        for chunk in ids.chunks(1_000) {
            let payments: Vec<Payment> = chunk
                .iter()
                .map(|&id| Payment {
                    id,
                    cents: cents(id),
                })
                .collect();
            entry.send(&payments).await.unwrap();
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while booked(&out).0.len() < 2_000 {
        assert!(Instant::now() < deadline, "the ledger did not get going");
        std::thread::sleep(Duration::from_millis(10));
    }
    let check = process_of(ledger.id(), "check").expect("a check process");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(check).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while booked(&out).0.len() < usize::try_from(PAYMENTS).unwrap() {
        assert!(
            Instant::now() < deadline,
            "{} of {PAYMENTS} booked",
            booked(&out).0.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let restarted = process_of(ledger.id(), "check");
    assert!(restarted.is_some_and(|pid| pid != check), "check restarted");
    // A second delivery of any of them would have come by now: what was claimed came
    // before the last first delivery.
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(ledger.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(ledger.wait().unwrap().success());
    booked(&out)
}

fn expected_sum() -> i64 {
    (0..PAYMENTS).map(cents).sum()
}

#[test]
fn a_check_process_killed_mid_run_loses_nothing_and_book_books_each_payment_once() {
    let (times, sum) = killed_mid_run(true);
    assert_eq!(times.len(), usize::try_from(PAYMENTS).unwrap());
    assert_eq!(times.keys().next_back(), Some(&(PAYMENTS - 1)));
    let twice: Vec<_> = times.iter().filter(|&(_, &n)| n > 1).take(5).collect();
    assert!(twice.is_empty(), "booked more than once: {twice:?}");
    assert_eq!(sum, expected_sum());
}

/// Runs of the test without deduplication, at most, until one shows a payment booked
/// twice.
const RUNS_FOR_A_DUPLICATE: usize = 5;

#[test]
fn without_deduplication_each_payment_is_booked_at_least_once() {
    // A kill that comes while `check` holds payments it has sent on but not yet
    // acknowledged gets them booked again without the deduplication — which is what
    // makes the other test's "once" mean something. Where the kill lands is up to the
    // scheduler: it found such payments in about three runs of four (6 of 8 on
    // 2026-11-26), so the test tries a few runs until one shows it; every run must
    // book each payment at least once.
    for run in 1..=RUNS_FOR_A_DUPLICATE {
        let (times, sum) = killed_mid_run(false);
        assert_eq!(times.len(), usize::try_from(PAYMENTS).unwrap());
        assert!(sum >= expected_sum());
        let twice = times.values().filter(|&&n| n > 1).count();
        if twice > 0 {
            assert!(sum > expected_sum());
            return;
        }
        eprintln!("run {run}: the kill found no payment sent on and unacknowledged");
    }
    panic!("no payment was delivered twice in {RUNS_FOR_A_DUPLICATE} runs");
}
