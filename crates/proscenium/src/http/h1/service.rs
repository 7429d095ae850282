//! HTTP/1.1 as the runtime's [`Protocol`]: what a server hands its loops and threads,
//! and what each of them shares among its connections.

use std::cell::{Cell, OnceCell, RefCell};
use std::future::poll_fn;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;

use bytes::BytesMut;
use parking_lot::Mutex;

use super::answer::{self, Terms};
use super::conn::{self, Start};
use super::idle::Shelf;
use crate::config::{Config, Http2Spec, Limits, Timeouts};
use crate::http::access_log::AccessLog;
use crate::http::compress::Compression;
use crate::http::intake::Bodies;
use crate::http::meter::{Meters, Table};
use crate::http::request_id::RequestIds;
use crate::http::response::Respond;
use crate::rt::{
    Host, Left, LocalProtocol, Protocol, Readiness, Sleepers, Sleeping, Ticket, Visit,
};
use crate::transport::Stream;

/// HTTP/1.1 serving an app: the protocol a server hands the runtime, and what each
/// loop's side of it shares with the others (cloned into each, see [`Http1Loop`]).
#[derive(Debug, Clone)]
pub(crate) struct Http1 {
    pub(crate) app: Arc<dyn Respond>,
    /// What a request may hold (`[limits]`).
    pub(crate) limits: Limits,
    /// How long each part of an exchange may take (`[timeouts]`).
    pub(crate) timeouts: Timeouts,
    /// HTTP/2's settings (`[http2]`).
    pub(crate) http2: Http2Spec,
    pub(crate) log: Option<AccessLog>,
    /// The access log's path and `debug` this edition was made with: a reload opens
    /// the log again only when they change.
    log_as: (Option<PathBuf>, bool),
    /// The server's room for request bodies that wait for more bytes.
    pub(crate) bodies: Bodies,
    /// Fields every answer carries (whole lines): HSTS, over TLS.
    fields: Arc<[u8]>,
    /// `Strict-Transport-Security`, over TLS when configured, for HTTP/2's answers.
    #[cfg(feature = "http2")]
    pub(crate) hsts: Option<http::HeaderValue>,
    /// How answers are compressed, and the compressed static files every loop shares.
    pub(crate) compression: Arc<Compression>,
    /// The request counters of the admin listener's `/metrics`, when it is on.
    meters: Option<Arc<Meters>>,
    /// How requests get ids (`[request_id]`), when they do.
    pub(crate) ids: Option<RequestIds>,
    /// The reloads of this protocol, shared by every copy and edition of it.
    reloads: Arc<Reloads>,
    /// Which reload made this edition (0: the one the server started with).
    edition: u64,
}

/// The newest edition of a protocol a SIGHUP made, for loops and threads to take up
/// at their next connection (see [`Http1Loop::current`]).
#[derive(Debug, Default)]
struct Reloads {
    /// The newest edition's number: read on every connection, written by a reload.
    newest: AtomicU64,
    /// The newest edition, once a reload has made one.
    latest: Mutex<Option<Http1>>,
}

impl Http1 {
    /// Returns the protocol serving `app` as `config` says, with the access log it
    /// names (opened here; a log that cannot be opened is reported, and not kept).
    pub(crate) fn new(app: Arc<dyn Respond>, config: &Config) -> Self {
        let log = open_log(config);
        Self::with_log(app, config, log)
    }

    /// Returns the protocol serving `app` as `config` says, writing `log`.
    fn with_log(app: Arc<dyn Respond>, config: &Config, log: Option<AccessLog>) -> Self {
        let bodies = Bodies::new(&config.limits);
        let hsts = hsts(&config.tls);
        Self {
            compression: Arc::new(Compression::new(&config.compression)),
            fields: hsts
                .as_ref()
                .map_or_else(Vec::new, |value| {
                    format!("strict-transport-security: {value}\r\n").into_bytes()
                })
                .into(),
            #[cfg(feature = "http2")]
            hsts: hsts
                .map(|value| http::HeaderValue::from_str(&value).expect("a valid field value")),
            ids: RequestIds::new(&config.request_id),
            app,
            limits: config.limits.clone(),
            timeouts: config.timeouts.clone(),
            http2: config.http2.clone(),
            log,
            log_as: (config.log.clone(), config.debug),
            bodies,
            meters: None,
            reloads: Arc::default(),
            edition: 0,
        }
    }

    /// Makes a new edition of this protocol from `config`, for every loop and thread
    /// to serve their next connections with; those open go on under the edition they
    /// started with. The access log is opened again only when its path or its
    /// `debug` changed.
    pub(crate) fn reload(&self, config: &Config) {
        let mut latest = self.reloads.latest.lock();
        let running = latest.as_ref().unwrap_or(self);
        let same_log = running.log_as == (config.log.clone(), config.debug);
        let log = if same_log {
            running.log.clone()
        } else {
            open_log(config)
        };
        let edition = running.edition + 1;
        let fresh = Self {
            meters: self.meters.clone(),
            reloads: self.reloads.clone(),
            edition,
            ..Self::with_log(self.app.clone(), config, log)
        };
        *latest = Some(fresh);
        self.reloads.newest.store(edition, Ordering::Release);
    }

    /// Forgets the newest edition, which holds the reloads that hold it: called when
    /// the server stops, so that the two are freed.
    pub(crate) fn forget_reloads(&self) {
        self.reloads.latest.lock().take();
    }

    /// Returns the newest edition when a reload made one newer than this.
    fn newer(&self) -> Option<Self> {
        if self.reloads.newest.load(Ordering::Acquire) == self.edition {
            return None;
        }
        self.reloads.latest.lock().clone()
    }

    /// Runs `f` on the newest edition (this one until a reload made another).
    fn with_newest<R>(&self, f: impl FnOnce(&Self) -> R) -> R {
        if self.reloads.newest.load(Ordering::Acquire) == self.edition {
            return f(self);
        }
        f(self.reloads.latest.lock().as_ref().unwrap_or(self))
    }

    /// Counts every answer in `meters` (each thread in a table of its own).
    #[must_use]
    pub(crate) fn with_meters(mut self, meters: Arc<Meters>) -> Self {
        self.meters = Some(meters);
        self
    }

    /// What every answer carries; `meter` counts it.
    pub(super) fn fixed<'a>(&'a self, meter: Option<&'a Table>) -> answer::Fixed<'a> {
        answer::Fixed {
            log: self.log.as_ref(),
            meter,
            fields: &self.fields,
            compression: &self.compression,
            ids: self.ids.as_ref(),
            app: &*self.app,
        }
    }
}

impl Protocol for Http1 {
    type Local = Http1Loop;

    fn local(&self, host: Host) -> Rc<Http1Loop> {
        let shared = Rc::new(Http1Loop {
            parts: self.newer().unwrap_or_else(|| self.clone()),
            here: Rc::new(Here {
                meter: self.meters.as_ref().map(Meters::table_here),
                closing: Cell::new(false),
                sleepers: Sleepers::default(),
                shelf: OnceCell::new(),
            }),
            newer: RefCell::default(),
        });
        // A thread serves one connection and reads the clock for its Date; a loop
        // or a staged model's thread keeps the date fresh once a second, and a loop
        // shelves its long-idle connections (a staged model's go back to its
        // handle-client stage).
        if host != Host::Thread {
            tokio::task::spawn_local(crate::http::date::keep_fresh());
        }
        if host == Host::Loop {
            if let Err(e) = Shelf::start(&shared) {
                tracing::warn!("idle connections stay on their tasks on this loop: {e}");
            }
        }
        shared
    }

    fn overloaded(&self, peer: SocketAddr) -> BytesMut {
        self.with_newest(|newest| {
            let res = crate::http::response::unavailable("every thread is busy; try again shortly");
            let mut out = BytesMut::new();
            // Counted as the bound that refused it (`rt::overload`), not as a request.
            let line = newest.log.as_ref().map(|log| log.note(peer, None));
            let fixed = newest.fixed(None);
            let mut terms = Terms::refusal(line, None, &fixed);
            // An error page is small enough to buffer whole: nothing is left to send.
            let _ = answer::buffer(&mut out, res, &mut terms, true, &fixed);
            out
        })
    }

    fn readiness(&self, read: &[u8]) -> Readiness {
        self.with_newest(|newest| {
            super::ready::readiness(read, &newest.limits, |req| newest.app.streams(req))
        })
    }
}

/// HTTP/1.1's part of one loop (or one thread): what every connection on it shares,
/// one `Rc` per loop, so no atomic reference counting on the request path. It reads
/// as the protocol it is a side of (`Deref`): `shared.limits`, `shared.app`.
///
/// A connection is served by one edition of the protocol (`parts`) while it stays on
/// its loop, or for one visit to a thread; after a reload the loop serves its next
/// connections (a thread, its next visits) with the new edition, in a value of this
/// type beside the first, sharing the loop's own state (`here`).
#[derive(Debug)]
pub(crate) struct Http1Loop {
    parts: Http1,
    here: Rc<Here>,
    /// The loop's side of the newest edition, once a reload made one: kept by the
    /// side the runtime holds, for its next connections.
    newer: RefCell<Option<Rc<Http1Loop>>>,
}

/// What belongs to the loop rather than to an edition of the protocol.
#[derive(Debug)]
struct Here {
    /// Whether shutdown has begun, as this loop learnt it: read on every request, so a
    /// `Cell` rather than the runtime's `watch` (a lock).
    closing: Cell<bool>,
    /// The idle connections to wake when shutdown begins.
    sleepers: Sleepers,
    /// Where long-idle connections are put away (event loops only; see `idle`).
    shelf: OnceCell<Shelf>,
    /// This thread's request counters, when the server keeps them.
    meter: Option<Arc<Table>>,
}

impl Http1Loop {
    pub(crate) fn closing(&self) -> bool {
        self.here.closing.get()
    }

    /// The idle connections to wake when shutdown begins.
    pub(crate) fn sleepers(&self) -> &Sleepers {
        &self.here.sleepers
    }

    /// Where long-idle connections are put away (event loops only; see `idle`).
    pub(super) fn shelf(&self) -> &OnceCell<Shelf> {
        &self.here.shelf
    }

    /// This thread's request counters, when the server keeps them.
    pub(crate) fn meter(&self) -> Option<&Table> {
        self.here.meter.as_deref()
    }

    /// What every answer on this thread carries.
    pub(super) fn answering(&self) -> answer::Fixed<'_> {
        self.parts.fixed(self.meter())
    }

    /// Returns the loop's side of the newest edition of the protocol, for a new
    /// connection: this one unless a reload made another since. Costs one atomic
    /// load when none did.
    pub(crate) fn current(self: &Rc<Self>) -> Rc<Self> {
        let newest = self.parts.reloads.newest.load(Ordering::Acquire);
        if newest == self.parts.edition {
            return self.clone();
        }
        let known = self.newer.borrow().clone();
        if let Some(known) = known.filter(|known| known.parts.edition == newest) {
            return known;
        }
        let Some(parts) = self.parts.newer() else {
            return self.clone();
        };
        let fresh = Rc::new(Self {
            parts,
            here: self.here.clone(),
            newer: RefCell::default(),
        });
        *self.newer.borrow_mut() = Some(fresh.clone());
        fresh
    }

    /// Resolves once the server's shutdown has begun; meanwhile the waiting task is
    /// among the loop's sleepers, woken with the idle connections.
    pub(crate) async fn shutdown_begun(&self) {
        let mut sleeping = Sleeping::new(self.sleepers());
        poll_fn(|cx| {
            if self.closing() {
                Poll::Ready(())
            } else {
                sleeping.park(cx.waker());
                Poll::Pending
            }
        })
        .await;
    }

    /// The protocol this side is of, for a connection to take to another thread.
    pub(super) fn protocol(&self) -> Http1 {
        self.parts.clone()
    }
}

impl std::ops::Deref for Http1Loop {
    type Target = Http1;

    fn deref(&self) -> &Http1 {
        &self.parts
    }
}

impl LocalProtocol for Http1Loop {
    fn serve(
        self: &Rc<Self>,
        stream: Stream,
        peer: SocketAddr,
        ticket: Ticket,
    ) -> impl Future<Output: 'static> + 'static {
        conn::serve(
            stream,
            peer,
            self.current(),
            Start::Loop { served: 0, ticket },
        )
    }

    fn serve_visit(self: &Rc<Self>, visit: Visit) -> impl Future<Output = Left> + 'static {
        let Visit {
            stream,
            peer,
            progress,
        } = visit;
        let stream = stream
            .resume()
            .inspect_err(|e| tracing::warn!("cannot serve connection from {peer}: {e}"));
        let start = Start::Thread(progress);
        let conn = stream.map(|stream| conn::serve(stream, peer, self.current(), start));
        async move {
            match conn {
                Ok(conn) => conn.await,
                Err(_) => Left::Closed,
            }
        }
    }

    fn begin_closing(&self) {
        self.here.closing.set(true);
        self.here.sleepers.wake_all();
    }
}

/// Opens the access log `config` names; one that cannot be opened is reported, and
/// not kept.
fn open_log(config: &Config) -> Option<AccessLog> {
    let target = config.log.as_ref()?;
    AccessLog::open(target, config.debug)
        .inspect_err(|e| tracing::error!("cannot open access log {}: {e}", target.display()))
        .ok()
}

/// The value of `Strict-Transport-Security` when the server speaks TLS and `[tls]
/// hsts` asks for it (never over plain HTTP, where browsers ignore it).
fn hsts(tls: &crate::config::TlsSpec) -> Option<String> {
    if !tls.enabled() || tls.hsts == 0 {
        return None;
    }
    let subdomains = if tls.hsts_subdomains {
        "; includeSubDomains"
    } else {
        ""
    };
    Some(format!("max-age={}{subdomains}", tls.hsts))
}
