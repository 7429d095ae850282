//! A payment ledger: `POST /payments/:id/:cents` sends a payment through the graph's
//! entry `payments` to the stage `check` (cluster `check`), which passes on what it
//! accepts to `book` (cluster `book`), which appends `ID CENTS` to the file `--out`
//! names. `book` is idempotent by the payment's id: a payment delivered twice — as
//! at-least-once delivery between processes allows, when a process dies having sent
//! on what it had not yet acknowledged — is booked once. (`--no-dedup` turns that off,
//! to see the duplicates.)
//!
//! `ledger --out book.txt` runs it all in one process. With
//! `configs/three-processes.toml` and a Redis (`PROSCENIUM_REDIS_URL`), each cluster
//! runs in a process of its own and `front` serves the routes.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use proscenium::launch::Launcher;
use proscenium::stage::{Admission, Connector, Graph, Out, Stage, StageError};
use proscenium::{App, Path, StatusCode, inline};
use serde::{Deserialize, Serialize};

/// A payment, as it crosses processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payment {
    /// Its id: the key `book` drops a second delivery by.
    pub id: u64,
    /// Its amount.
    pub cents: i64,
}

/// The app's own options.
#[derive(clap::Args)]
struct Options {
    /// File `book` appends each booked payment to, as `ID CENTS` lines.
    #[arg(long)]
    out: PathBuf,
    /// Books every delivery, duplicates too.
    #[arg(long)]
    no_dedup: bool,
}

/// Payments `book` remembers the ids of, to drop a second delivery.
const REMEMBERED: usize = 1_000_000;

/// The graph every process builds alike.
fn graph(out: PathBuf, dedup: bool) -> Graph {
    let checked = Out::<Payment>::new("checked");
    let to_book = checked.clone();
    let mut graph = Graph::new();
    let check = graph.stage(
        Stage::stateless(
            "check",
            || (),
            move |(), payment: Payment, ctx| {
                if payment.cents == 0 {
                    return Err(StageError::handler("a payment of nothing"));
                }
                Ok(ctx.send(&to_book, payment)?)
            },
        )
        .output(&checked),
    );
    let book = Stage::stateful(
        "book",
        move || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&out)
        },
        |file, payment: Payment, _| {
            let file = file
                .as_mut()
                .map_err(|e| StageError::handler(e.to_string()))?;
            writeln!(file, "{} {}", payment.id, payment.cents)
                .map_err(|e| StageError::handler(e.to_string()))
        },
    );
    let book = graph.stage(if dedup {
        book.idempotent_by(REMEMBERED, |payment: &Payment| payment.id)
    } else {
        book
    });
    graph.connect(&check, "checked", &book, Connector::decoupled());
    let payments = Out::<Payment>::new("payments");
    graph.entry(
        &payments,
        &check,
        Connector::decoupled().admission(Admission::Reject),
    );
    graph.part([("check", (&check).into()), ("book", (&book).into())]);
    graph
}

fn main() -> ExitCode {
    Launcher::new().options::<Options>().run(|deploy| {
        let options = deploy.options();
        let running = deploy.start_graph("ledger", graph(options.out.clone(), !options.no_dedup));
        let payments = running
            .entry::<Payment>("payments")
            .expect("the graph declares the entry");
        App::new().get("/", inline(|| "ledger\n")).post(
            "/payments/:id/:cents",
            inline(move |Path((id, cents)): Path<(u64, i64)>| {
                payments
                    .send(Payment { id, cents })
                    .map(|()| StatusCode::ACCEPTED)
            }),
        )
    })
}
