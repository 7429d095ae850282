//! An upgraded connection's next protocol, run where its `101` was written (a loop, or
//! a staged model's thread) or moved off the thread that wrote it (a thread model's:
//! `rt/upgraded.rs`). Either way it is told when shutdown begins, and runs on to end
//! as its protocol ends it.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::transport::Stream;
use bytes::Bytes;

use crate::http::intake::Budget;
use crate::http::upgrade::{GoingAway, OnUpgrade, Run};
use crate::rt::Moved;

/// Runs `run` on `stream`, `read` its first bytes, its messages drawing on
/// `memory`, setting its `GoingAway` once `begun` resolves (shutdown has begun).
pub(super) async fn run_here(
    run: Run,
    stream: Stream,
    read: Bytes,
    memory: Arc<Budget>,
    begun: impl Future<Output = ()>,
) {
    let going_away = GoingAway::default();
    let mut running = std::pin::pin!(OnUpgrade::run(
        run,
        stream,
        read,
        going_away.clone(),
        memory
    ));
    tokio::select! {
        () = &mut running => {}
        () = begun => {
            going_away.set();
            running.await;
        }
    }
}

/// Returns `run` on `stream` as a connection to move to another thread: its socket
/// taken off this thread's reactor now, put on the other's there (`None`: the socket
/// failed, and is closed).
pub(super) fn moved(
    run: Run,
    stream: Stream,
    read: Bytes,
    memory: Arc<Budget>,
    peer: SocketAddr,
) -> Option<Moved> {
    let stream = stream
        .park()
        .inspect_err(|e| tracing::debug!("closing the upgraded connection from {peer}: {e}"))
        .ok()?;
    Some(Box::new(move |mut shutdown| {
        Box::pin(async move {
            let stream = match stream.resume() {
                Ok(stream) => stream,
                Err(e) => {
                    tracing::debug!("closing the upgraded connection from {peer}: {e}");
                    return;
                }
            };
            // Shutdown has begun, or the server that would say so is gone.
            let begun = async move {
                let _ = shutdown.wait_for(|stop| *stop).await;
            };
            run_here(run, stream, read, memory, begun).await;
        })
    }))
}
