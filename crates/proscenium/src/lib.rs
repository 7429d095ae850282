//! Proscenium is a Rust runtime for web services whose execution is chosen at deploy
//! time: the same [`App`] runs on one loop per core (the default), one loop, a thread
//! pool, a thread per connection or worker processes, as `proscenium.toml`,
//! `PROSCENIUM_*` variables or flags say — never the code.
//!
//! # Example
//!
//! ```no_run
//! use proscenium::{App, Json, Path, blocking, inline};
//!
//! fn main() -> std::process::ExitCode {
//!     proscenium::main(|_| {
//!         App::new()
//!             .get("/plaintext", inline(|| "Hello, World!"))
//!             .get("/users/:id", |Path(id): Path<u32>| async move { Json(serde_json::json!({ "id": id })) })
//!             .get("/report", blocking(|| std::fs::read_to_string("/etc/hostname").unwrap_or_default()))
//!     })
//! }
//! ```
//!
//! The binary then takes `serve` (the default), `routes` and `config`, with the deploy
//! flags of `proscenium serve` (`--model`, `--loops`, `--bind`, ...); see [`launch`].
//!
//! # A tour
//!
//! - [`App`] holds routes (`matchit` patterns such as `/picture/:id/likes`), a fallback,
//!   mounted tower services and [`middleware`]: synchronous [`Middleware`], async
//!   middleware ([`middleware::from_fn`]) and tower layers.
//! - Handlers are async fns, [`inline`] plain fns (run on the loop) or [`blocking`] plain
//!   fns (run on the blocking pool). Their arguments are extractors ([`Path`], [`Query`],
//!   [`Json`], `HeaderMap`, `Bytes`, `String`, [`Request`], and in [`extract`] forms,
//!   typed headers and cookie jars); their results implement [`IntoResponse`] (see
//!   [`response`] for redirects and response parts).
//! - [`main`] and [`launch::Launcher`] give an app its command line;
//!   [`config::Settings`] resolves its [`Config`] from defaults, the app's defaults,
//!   the file, the environment and flags, remembering where each value came from.
//! - [`Server`] runs an app by a [`Config`]: N event loops, each an OS thread with its
//!   own single-threaded tokio runtime, fed by a dispatcher (`jsq`, `round-robin` or
//!   `reuseport`); or threads, or worker processes.
//! - The HTTP/1.1 layer is sans-I/O: parsing and encoding are pure functions over bytes
//!   that every execution model drives.
//! - [`state`] shares values across every loop and thread without a lock in user code:
//!   handlers take [`state::Read`] / [`state::Write`], and the router takes the locks.
//! - [`actor`]: typed, supervised actors with bounded mailboxes, `tell` / `ask`,
//!   dispatchers named in configuration, timers and dead letters; [`events`]: an
//!   `EventEmitter`, `defer` and `next_tick`.
//! - [`stage`]: Leda's stage graphs — stages, connectors, clusters chosen in configuration.
//! - [`web`] serves static files and listings, and [`site`] assembles them, CGI
//!   and Lua below an app's routes as the configuration asks; [`ws`]
//!   WebSocket, over [`http::upgrade`].
//!
//! # Features
//!
//! By default: `cli` ([`main`], [`launch`]), `client`, `compression`, `cookies`,
//! `feeds` (`hub`, `ws`), `http2`, `multipart`, `tls`, `traces` (the OTLP exporter
//! and W3C Trace Context), `typed-header` and `metrics` (the admin listener:
//! `/metrics`, the dashboard, `/healthz`, `/readyz`). Opt in to `redis`, `lua` and
//! `cgi`; `full` is everything. A configuration that asks for what the build leaves
//! out (`[lua] app` without `lua`, say) is refused at start, naming the feature.

// docs.rs (`--cfg docsrs`, nightly) marks each item with the features it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
// The workspace warns on missing docs; the library's public API refuses them.
#![deny(missing_docs)]

pub mod actor;
#[cfg(feature = "metrics")]
mod admin;
pub mod app;
#[cfg(feature = "cgi")]
pub mod cgi;
#[cfg(feature = "client")]
pub mod client;
pub mod config;
mod counters;
mod error;
pub mod events;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzz;
#[cfg(feature = "hosted")]
pub mod hosted;
pub mod http;
#[cfg(feature = "feeds")]
pub mod hub;
#[cfg(feature = "cli")]
pub mod launch;
#[cfg(feature = "lua")]
pub mod lua;
pub mod rt;
mod server;
mod shared;
pub mod site;
pub mod sse;
pub mod stage;
mod staged;
#[cfg(feature = "redis")]
pub mod stream;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(feature = "tls")]
pub mod tls;
#[cfg(feature = "traces")]
#[path = "trace_context/otel.rs"]
mod trace_context;
#[cfg(not(feature = "traces"))]
#[path = "trace_context/no_otel.rs"]
mod trace_context;
pub mod transport;
pub mod web;
mod wire;
#[cfg(feature = "feeds")]
pub mod ws;

pub use ::http::{HeaderMap, Method, StatusCode, header};
pub use bytes::Bytes;
/// The `headers` crate, whose types [`TypedHeader`](extract::TypedHeader) takes.
#[cfg(feature = "typed-header")]
pub use headers;

/// Extractors, where an axum user looks for them.
pub mod extract {
    pub use crate::app::state_extractors::State;
    pub use crate::app::{
        BodyDataStream, BodyError, BodyStream, Extension, ExtensionRejection, Form, FormRejection,
        FromRequest, FromRequestHead, FromRequestParts, Json, JsonRejection, Path, PathRejection,
        Query, QueryRejection, StringRejection,
    };
    #[cfg(feature = "typed-header")]
    pub use crate::app::{TypedHeader, TypedHeaderRejection};

    /// `multipart/form-data` bodies read field by field.
    #[cfg(feature = "multipart")]
    pub mod multipart {
        pub use crate::app::{Field, Multipart, MultipartError};
    }

    #[cfg(feature = "cookies")]
    /// Cookie jars, with the `cookie` crate's [`Cookie`](cookie::Cookie) and [`Key`](cookie::Key).
    pub mod cookie {
        pub use crate::app::{
            CookieJar, KeyedCookieJar, Private, PrivateCookieJar, Protection, Signed,
            SignedCookieJar,
        };
        pub use ::cookie::{Cookie, Expiration, Key, SameSite};
    }
}

/// Shared state across loops without a lock in user code — Node.Scala's safe stateful
/// services (sec. 4.1 of the paper), with types where Node.Scala analysed bytecode.
///
/// [`App::state`](crate::App::state) registers any `T: Send + Sync + 'static`; a
/// handler reaches it only through [`Read<T>`](state::Read) and
/// [`Write<T>`](state::Write) in its signature. From those the route's class —
/// stateless, reading, writing — and lock set are derived when it is registered
/// (`proscenium routes` prints them). Before the handler runs, the router takes the
/// whole set in one global order (registration order): it tries first, and on contention defers the request so the loop serves others; after a
/// bounded number of tries it waits in the locks' fair queues. Reading routes share;
/// writing routes exclude. The locks are released when the handler's answer is
/// produced — when its arguments drop, a panic included.
///
/// This holds under every execution model, for handlers on the blocking pool too: the
/// locks are process-wide. Under `prefork` each worker process has its own copy of the
/// state; share across processes through an outside store.
///
/// # Example
///
/// ```
/// use proscenium::{App, inline};
/// use proscenium::state::{Counter, Read, Write};
///
/// let app = App::new()
///     .state(Counter::default())
///     .post("/hits", inline(|mut hits: Write<Counter>| hits.increment().to_string()))
///     .get("/hits", inline(|hits: Read<Counter>| hits.get().to_string()));
/// ```
pub mod state {
    pub use crate::app::Then;
    pub use crate::app::state_extractors::{Read, State, StateRejection, Write};
    pub use crate::shared::{Access, Class, Counter, LruCache, SharedMap, StateAccess};
}

/// Responses, where an axum user looks for them.
pub mod response {
    #[cfg(feature = "typed-header")]
    pub use crate::app::TypedHeader;
    pub use crate::app::{Form, Html, IntoResponse, IntoResponseParts, Json, Redirect, Response};
}

pub use self::app::BodyStream;
pub use self::app::FromRequestParts;
#[cfg(feature = "multipart")]
pub use self::app::Multipart;
pub use self::app::middleware;
pub use self::app::state_extractors::State;
pub use self::app::{
    App, Handler, Html, IntoResponse, Json, Middleware, Next, Path, Query, Reply, Response,
    blocking, blocking_on, inline,
};
pub use self::config::{
    CompressionSpec, Config, Dispatch, Http2Spec, Limits, Model, ModelSpec, Timeouts,
};
pub use self::error::Error;
pub use self::http::{Body, Request};
#[cfg(feature = "cli")]
pub use self::launch::main;
#[cfg(feature = "cli")]
pub(crate) use self::server::Signals;
pub use self::server::{Server, ServerHandle};
