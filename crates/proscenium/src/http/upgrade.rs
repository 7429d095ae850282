//! Switching protocols (RFC 9110 §7.8): a handler answers `101 Switching Protocols`
//! with [`upgrade`], naming the protocol and what runs on the connection next; the
//! connection writes the answer's head, stops speaking HTTP, and hands its socket —
//! with whatever the client sent after its request that was already read — to that
//! function, on the loop that served it (under the thread models, on their one thread
//! of upgraded connections, apart from the request threads), where it counts against
//! the connection cap until it ends. WebSocket is built on it.
//!
//! # Example
//!
//! ```
//! use proscenium::http::{Upgraded, upgrade};
//! use proscenium::{App, inline};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! // A protocol of one's own: everything the client sends comes back.
//! let app = App::new().get(
//!     "/echo",
//!     inline(|| {
//!         upgrade("echo", |upgraded: Upgraded| async move {
//!             let (mut stream, first) = upgraded.into_parts();
//!             let _ = stream.write_all(&first).await;
//!             let mut buf = [0; 1024];
//!             while let Ok(n @ 1..) = stream.read(&mut buf).await {
//!                 if stream.write_all(&buf[..n]).await.is_err() {
//!                     break;
//!                 }
//!             }
//!         })
//!     }),
//! );
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::transport::Stream;
use bytes::Bytes;
use parking_lot::Mutex;

use super::intake::Budget;
use super::{Body, Response};

/// A connection another protocol has taken over: its socket, the bytes the client
/// sent after the request that upgraded it (already read from the socket), and the
/// server's word that it is going away.
#[derive(Debug)]
pub struct Upgraded {
    stream: Stream,
    read: Bytes,
    going_away: GoingAway,
    /// The server's memory budget for what clients send (`limits.max_buffered_bodies`).
    #[cfg_attr(
        not(feature = "feeds"),
        expect(dead_code, reason = "only WebSocket reads it")
    )]
    memory: Arc<Budget>,
}

impl Upgraded {
    /// Returns the connection (TCP, or TLS over it) and the bytes already read from
    /// it, to be taken first.
    pub fn into_parts(self) -> (Stream, Bytes) {
        (self.stream, self.read)
    }

    /// What tells the protocol that the server's shutdown has begun: a protocol with a
    /// way to say goodbye (WebSocket's close 1001) says it then, and the connection
    /// ends well before the shutdown deadline.
    pub fn going_away(&self) -> GoingAway {
        self.going_away.clone()
    }

    /// The server's memory budget for what clients send, which a protocol's messages
    /// draw on as request bodies do.
    #[cfg(feature = "feeds")]
    pub(crate) fn memory(&self) -> Arc<Budget> {
        Arc::clone(&self.memory)
    }
}

/// Set once the server's shutdown has begun, for an upgraded connection.
#[derive(Debug, Clone, Default)]
pub struct GoingAway(Arc<GoingAwayState>);

#[derive(Debug, Default)]
struct GoingAwayState {
    set: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

impl GoingAway {
    /// Whether shutdown has begun.
    pub fn is_set(&self) -> bool {
        self.0.set.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Waits until shutdown has begun (at once if it has).
    pub async fn wait(&self) {
        let notified = self.0.notify.notified();
        if self.is_set() {
            return;
        }
        notified.await;
    }

    pub(crate) fn set(&self) {
        self.0.set.store(true, std::sync::atomic::Ordering::Release);
        self.0.notify.notify_waiters();
    }
}

/// What runs on an upgraded connection, made where it runs.
pub(crate) type Run = Box<dyn FnOnce(Upgraded) -> Pin<Box<dyn Future<Output = ()>>> + Send>;

/// A response's hand-over to another protocol, kept in its extensions (which must be
/// `Clone`: the function is taken out once, by the connection).
#[derive(Clone)]
pub(crate) struct OnUpgrade(Arc<Mutex<Option<Run>>>);

impl OnUpgrade {
    /// Takes the hand-over out of a `101` response, if it has one.
    pub(crate) fn take(res: &mut Response) -> Option<Run> {
        if res.status() != http::StatusCode::SWITCHING_PROTOCOLS {
            return None;
        }
        res.extensions_mut()
            .remove::<Self>()
            .and_then(|on| on.0.lock().take())
    }

    /// Runs the hand-over on `stream`, `read` its first bytes, `going_away` set once
    /// shutdown begins, `memory` the budget its messages draw on.
    pub(crate) fn run(
        run: Run,
        stream: Stream,
        read: Bytes,
        going_away: GoingAway,
        memory: Arc<Budget>,
    ) -> impl Future<Output = ()> {
        run(Upgraded {
            stream,
            read,
            going_away,
            memory,
        })
    }
}

/// Returns a `101 Switching Protocols` response to `protocol` (its `Upgrade` field;
/// the server adds `Connection: upgrade`), with `then` to run on the connection once
/// the head is written — to be given only to a request that asked for `protocol` in
/// its own `Upgrade` field (RFC 9110 §7.8), which is the handler's to check. Under the
/// thread models `then` runs on their thread of upgraded connections, not on a request
/// thread: work that computes or blocks there delays the other upgraded connections,
/// and belongs on the blocking pool. Fields the protocol's handshake needs go in its
/// `headers_mut()`; a handler that changes its status answers as usual and `then`
/// never runs.
///
/// # Panics
///
/// When `protocol` is not a valid field value (a protocol token is).
pub fn upgrade<F, Fut>(protocol: &str, then: F) -> Response
where
    F: FnOnce(Upgraded) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let run: Run = Box::new(move |upgraded| Box::pin(then(upgraded)));
    let mut switching = Response::new(Body::empty());
    *switching.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
    switching.headers_mut().insert(
        http::header::UPGRADE,
        http::HeaderValue::from_str(protocol).expect("a protocol token is a field value"),
    );
    switching
        .extensions_mut()
        .insert(OnUpgrade(Arc::new(Mutex::new(Some(run)))));
    switching
}
