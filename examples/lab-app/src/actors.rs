//! The thesis's actor side as a route: `GET /actor?n=N` asks one of a pool of actors
//! (one per core, in turn), as a Play controller asks Akka actors, for the iterative
//! fib(N), and answers with its reply — the body of `/fib-iter?n=N`, so the two routes
//! differ by the ask alone. The actors run on the default dispatcher: spawned at
//! start-up, off the loops, that is a thread per core of their own.

use std::time::Duration;

use proscenium::actor::{Actor, Context, Handler, Message, Props, Router, Routing, System};
use proscenium::state::Read;
use proscenium::{Query, StatusCode};

use crate::workloads::{N, Rejection, fib_hex};

/// Computes Fibonacci numbers when asked.
pub(crate) struct Fibber;

impl Actor for Fibber {}

/// fib(n), please.
pub(crate) struct FibOf(u32);

impl Message for FibOf {
    type Reply = Result<String, Rejection>;
}

impl Handler<FibOf> for Fibber {
    fn handle(&mut self, FibOf(n): FibOf, _: &mut Context<Self>) -> Result<String, Rejection> {
        fib_hex(n)
    }
}

/// The actors: one per core.
pub(crate) fn fibbers(system: &System) -> Router<Fibber> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    system.spawn_pool(&Props::named("fib"), cores, Routing::RoundRobin, || Fibber)
}

/// How long a request waits for an actor's answer: the lab's own request timeout.
const ASK_TIMEOUT: Duration = Duration::from_secs(10);

/// `GET /actor?n=N`: the answer of one of the actors; 503 when none answers (a full
/// mailbox, a timeout).
// Handlers take their extractors by value.
#[allow(clippy::needless_pass_by_value)]
pub(crate) async fn ask(
    fibbers: Read<Router<Fibber>>,
    Query(q): Query<N>,
) -> Result<String, (StatusCode, String)> {
    match fibbers.ask_within(FibOf(q.n), ASK_TIMEOUT).await {
        Ok(reply) => reply.map_err(|(status, why)| (status, why.to_owned())),
        Err(e) => Err((StatusCode::SERVICE_UNAVAILABLE, format!("no answer: {e}\n"))),
    }
}
