//! A connection's next protocol — what an `http::upgrade` answer switches to, or
//! HTTP/2 — run where the connection was read (a loop) or moved off the thread that
//! read it (a thread model's or a staged model's thread: `rt/upgraded.rs`, or the
//! staged thread's loop, apart from the HTTP/1.1 visit it was). Either way it is told
//! when shutdown begins, and runs on to end as its protocol ends it.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;

use super::service::Http1;
use crate::http::intake::Budget;
use crate::http::upgrade::{GoingAway, OnUpgrade, Run};
use crate::rt::{Host, LocalProtocol, Moved, Protocol};
use crate::transport::Stream;

/// Resolves once the server's shutdown has begun (or the server is gone).
pub(super) type Begun = Pin<Box<dyn Future<Output = ()>>>;

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

/// Serves HTTP/2 on `stream`, `read` its first bytes, with a side of `protocol` of
/// its own, which closes once `begun` resolves: GOAWAY, and the streams in flight end.
pub(super) async fn http2_here(
    protocol: Http1,
    stream: Stream,
    read: Bytes,
    peer: SocketAddr,
    begun: Begun,
) {
    let shared = protocol.local(Host::Thread);
    let mut serving = std::pin::pin!(crate::http::h2::serve(stream, read, peer, shared.clone()));
    tokio::select! {
        () = &mut serving => {}
        () = begun => {
            shared.begin_closing();
            serving.await;
        }
    }
}

/// Returns the connection on `stream` to move to another thread, where `next` runs
/// it: its socket taken off this thread's reactor now, put on the other's there
/// (`None`: the socket failed, and is closed).
pub(super) fn moved<F, Fut>(stream: Stream, peer: SocketAddr, next: F) -> Option<Moved>
where
    F: FnOnce(Stream, Begun) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
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
            let begun = Box::pin(async move {
                let _ = shutdown.wait_for(|stop| *stop).await;
            });
            next(stream, begun).await;
        })
    }))
}
