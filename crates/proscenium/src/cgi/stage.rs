//! The way from a request's thread to the staged server's *cgi* stage (Leda's Fig. 2,
//! `staged/scripts.rs`): with one installed on the thread, a script's run waits its
//! turn in the stage's queue — past `[cgi] max_scripts` running, a request waits
//! there instead of being refused — and runs on a thread of the stage's cluster, its
//! answer sent back to the connection. Without one, as under every other model, the
//! script runs where its request is served.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_util::future::LocalBoxFuture;
use tokio::sync::oneshot;

use crate::app::Reply;
use crate::http::Response;
use crate::http::response::unavailable;
use crate::rt::hand_off::Handed;

/// A script's run, for the stage to start on its thread.
pub(crate) struct CgiJob(Box<dyn FnOnce() -> LocalBoxFuture<'static, ()> + Send>);

impl CgiJob {
    /// Runs the script on this thread's loop, and sends its answer back.
    pub(crate) async fn run(self) {
        (self.0)().await;
    }

    /// Runs the script here, and answers with what it sent back.
    async fn run_then(self, answered: oneshot::Receiver<Response>) -> Response {
        self.run().await;
        answered
            .await
            .unwrap_or_else(|_| unavailable("the script was not run"))
    }
}

/// Takes a script's run; one it gives back (the stage has not started yet) runs here.
type Hook = Rc<dyn Fn(CgiJob) -> Handed<CgiJob>>;

thread_local! {
    static STAGE: RefCell<Option<Hook>> = const { RefCell::new(None) };
}

/// Sends the scripts of requests served on this thread to a stage, through `hook`.
pub(crate) fn install_stage(hook: impl Fn(CgiJob) -> Handed<CgiJob> + 'static) {
    STAGE.set(Some(Rc::new(hook)));
}

/// Answers with `run`: through this thread's stage when it has one (503 when its
/// queue is full), given until when it may wait for a script slot — `wait` from now —,
/// else here, given `None`: a slot now or never.
pub(super) fn answer<F>(
    wait: Duration,
    run: impl FnOnce(Option<Instant>) -> F + Send + 'static,
) -> Reply
where
    F: Future<Output = Response> + 'static,
{
    let Some(stage) = STAGE.with_borrow(Clone::clone) else {
        return Reply::later(async move { run(None).await });
    };
    let (reply, answered) = oneshot::channel();
    let until = Instant::now() + wait;
    let job = CgiJob(Box::new(move || {
        Box::pin(async move {
            // A client that leaves, before or while the script runs, has it stopped
            // (dropped, its processes killed), as its request's own future would.
            let mut reply = reply;
            tokio::select! {
                res = run(Some(until)) => {
                    let _ = reply.send(res);
                }
                () = reply.closed() => {}
            }
        })
    }));
    match stage(job) {
        Handed::Taken => {}
        Handed::Refused => {
            return Reply::ready(unavailable("too many scripts waiting; try again shortly"));
        }
        Handed::NotOpen(job) => return Reply::later(job.run_then(answered)),
    }
    Reply::later(async move {
        answered
            .await
            .unwrap_or_else(|_| unavailable("the script was not run: the server is stopping"))
    })
}
