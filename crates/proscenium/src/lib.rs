//! Proscenium is a Rust runtime for web services whose execution is chosen at deploy
//! time: the same [`App`] runs on one loop per core (the default), and — as the
//! project grows — on threads, processes and stage graphs, configured in
//! `proscenium.toml` rather than in code.
//!
//! # Example
//!
//! ```no_run
//! use proscenium::{App, Json, Path, Server, blocking, inline};
//!
//! let app = App::new()
//!     .get("/plaintext", inline(|| "Hello, World!"))
//!     .get("/users/:id", |Path(id): Path<u32>| async move { Json(serde_json::json!({ "id": id })) })
//!     .get("/report", blocking(|| std::fs::read_to_string("/etc/hostname").unwrap_or_default()));
//! Server::new(app).bind("127.0.0.1:3000".parse().unwrap()).run().unwrap();
//! ```
//!
//! # A tour
//!
//! - [`App`] holds routes (`matchit` patterns such as `/picture/:id/likes`), a fallback,
//!   mounted tower services and [`Middleware`].
//! - Handlers are async fns, [`inline`] plain fns (run on the loop) or [`blocking`] plain
//!   fns (run on the blocking pool). Their arguments are extractors ([`Path`], [`Query`],
//!   [`Json`], `HeaderMap`, `Bytes`, `String`, [`Request`]); their results implement
//!   [`IntoResponse`].
//! - [`Server`] runs an app by a [`Config`]: N event loops, each an OS thread with its
//!   own single-threaded tokio runtime, fed by a dispatcher (`jsq`, `round-robin` or
//!   `reuseport`).
//! - The HTTP/1.1 layer is sans-I/O: parsing and encoding are pure functions over bytes
//!   that every execution model drives.
//! - [`state`] shares values across every loop and thread without a lock in user code:
//!   handlers take [`state::Read`] / [`state::Write`], and the router takes the locks.
//! - [`actor`]: typed, supervised actors with bounded mailboxes, `tell` / `ask`,
//!   dispatchers named in configuration, timers and dead letters; [`events`]: an
//!   `EventEmitter`, `defer` and `next_tick`.
//! - [`web`] adds static files, listings, error pages and the access log.

pub mod actor;
pub mod app;
pub mod config;
mod error;
pub mod events;
pub mod http;
pub mod launch;
pub mod rt;
mod server;
pub mod state;
pub mod web;

pub use ::http::{HeaderMap, Method, StatusCode, header};
pub use bytes::Bytes;

pub use self::app::{
    App, Handler, Html, IntoResponse, Json, Middleware, Next, Path, Query, Reply, Response,
    blocking, blocking_on, inline,
};
pub use self::config::{Config, Dispatch, Limits, Model, ModelSpec, Timeouts};
pub use self::error::Error;
pub use self::http::{Body, Request};
pub use self::launch::main;
pub use self::server::{Server, ServerHandle};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
