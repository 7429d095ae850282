//! The application API: an [`App`] of routes and middleware, handlers with typed
//! extractors, and responses through [`IntoResponse`].

mod body_stream;
mod compose;
#[cfg(feature = "cookies")]
mod cookies;
mod extension;
mod extract;
mod form;
mod from_parts;
mod handler;
pub mod middleware;
#[cfg(feature = "multipart")]
mod multipart;
mod optional;
mod params;
mod redirect;
mod rejection;
mod response;
mod response_parts;
mod router;
mod service;
pub(crate) mod state_extractors;
mod then;
#[cfg(feature = "typed-header")]
mod typed_header;

use std::sync::Arc;

use bytes::Bytes;
use http::Method;
use http_body_util::Full;

pub use self::body_stream::{BodyDataStream, BodyError, BodyStream};
#[cfg(feature = "cookies")]
pub use self::cookies::{
    CookieJar, KeyedCookieJar, Private, PrivateCookieJar, Protection, Signed, SignedCookieJar,
};
pub use self::extension::{Extension, ExtensionRejection};
pub use self::extract::{
    FromRequest, FromRequestHead, JsonRejection, Path, PathRejection, Query, QueryRejection,
    StringRejection,
};
pub use self::form::{Form, FormRejection};
pub use self::from_parts::{FromRequestLast, FromRequestParts, FromRequestPartsArgs, ViaParts};
pub use self::handler::{
    Blocking, Callable, FromRequestArgs, Handler, Inline, Mode, blocking, blocking_on, inline,
};
use self::middleware::{Chain, IntoMiddleware};
pub use self::middleware::{Middleware, Next};
#[cfg(feature = "multipart")]
pub use self::multipart::{Field, Multipart, MultipartError};
pub use self::redirect::Redirect;
pub use self::response::{Html, IntoResponse, Json, Reply, ReplyFuture};
pub use self::response_parts::IntoResponseParts;
pub use self::router::RouteInfo;
#[cfg(feature = "lua")]
pub(crate) use self::router::to_matchit;
pub use self::service::{AppService, SendService};
#[cfg(feature = "lua")]
pub(crate) use self::state_extractors::Write;
#[cfg(any(feature = "cookies", feature = "lua"))]
pub(crate) use self::state_extractors::{Read, StateRejection};
pub use self::then::{Continuation, HandlerOutput, Outcome, Then};
#[cfg(feature = "typed-header")]
pub use self::typed_header::{TypedHeader, TypedHeaderRejection};
pub(crate) use crate::http::response::error;
pub use crate::http::{LocalResponseFuture, Response};

use self::handler::erase;
use self::router::Routes;
use crate::http::{BoxError, Request};

/// A web application: routes, a fallback, and middleware around them.
///
/// Built once, then shared by every loop and thread of the server; how it runs is
/// decided by the [`Server`](crate::Server) configuration, never here.
///
/// # Examples
///
/// ```
/// use proscenium::{App, Json, Path, inline};
///
/// let app = App::new()
///     .get("/plaintext", inline(|| "Hello, World!"))
///     .get("/json", inline(|| Json(serde_json::json!({"message": "Hello, World!"}))))
///     .get("/users/:id", |Path(id): Path<u32>| async move { format!("user {id}") });
/// assert_eq!(app.routes().count(), 3);
/// ```
#[derive(Default)]
pub struct App {
    /// Middleware and routes, shared with the `Next`s that outlive their call.
    chain: Arc<Chain>,
    pub(crate) live: crate::rt::watchdog::LiveStats,
    /// Sections the app adds to `/_status`, by name, in the order added.
    pub(crate) status: Vec<(&'static str, StatusReader)>,
}

/// Reads one section of `/_status` when it is asked for.
pub(crate) type StatusReader = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

/// The keys `/_status` uses itself.
const STATUS_KEYS: [&str; 4] = ["server", "version", "pid", "loops"];

macro_rules! method_routes {
    ($($name:ident => $method:ident,)*) => {
        $(
            #[doc = concat!("Adds a route for `", stringify!($method), "` requests to `pattern`.")]
            ///
            /// # Panics
            ///
            /// When the pattern is invalid or already has a route for this method.
            #[must_use]
            pub fn $name<H: Handler<T>, T: 'static>(self, pattern: &str, handler: H) -> Self {
                self.route(Method::$method, pattern, handler)
            }
        )*
    };
}

impl App {
    /// Returns an app with no routes: every request gets 404.
    pub fn new() -> Self {
        Self::default()
    }

    method_routes! {
        get => GET,
        post => POST,
        put => PUT,
        patch => PATCH,
        delete => DELETE,
    }

    /// Adds a route for `method` requests to `pattern`.
    ///
    /// Patterns are literal segments, `:name` (one segment) and `*name` (the rest of
    /// the path). A GET route answers HEAD too; a path with routes for other methods
    /// only answers 405 with `Allow`.
    ///
    /// # Panics
    ///
    /// When the pattern is invalid or already has a route for this method.
    #[must_use]
    pub fn route<H: Handler<T>, T: 'static>(
        mut self,
        method: Method,
        pattern: &str,
        handler: H,
    ) -> Self {
        self.routes_mut().add(Some(method), pattern, erase(handler));
        self
    }

    /// Adds a route that answers every method at `pattern`.
    ///
    /// # Panics
    ///
    /// When the pattern is invalid or already has an any-method route.
    #[must_use]
    pub fn any<H: Handler<T>, T: 'static>(mut self, pattern: &str, handler: H) -> Self {
        self.routes_mut().add(None, pattern, erase(handler));
        self
    }

    /// Sets the handler for requests that match no route (404 without one).
    #[must_use]
    pub fn fallback<H: Handler<T>, T: 'static>(mut self, handler: H) -> Self {
        self.routes_mut().set_fallback(erase(handler));
        self
    }

    /// Mounts a tower service, such as an axum `Router`, at `prefix`.
    ///
    /// The service sees paths with the prefix removed and answers every method.
    ///
    /// # Panics
    ///
    /// When the prefix conflicts with a route.
    #[must_use]
    pub fn mount<S, B>(mut self, prefix: &str, service: S) -> Self
    where
        S: tower::Service<http::Request<Full<Bytes>>, Response = http::Response<B>>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: 'static,
        S::Error: Into<BoxError>,
        B: http_body::Body + Send + 'static,
        B::Data: Into<Bytes>,
        B::Error: Into<BoxError>,
    {
        let base = prefix.trim_end_matches('/');
        let handler: handler::BoxHandler = Arc::new(service::Mounted {
            service,
            prefix: base.to_owned(),
        });
        if !base.is_empty() {
            self.routes_mut().add(None, base, handler.clone());
        }
        self.routes_mut()
            .add(None, &format!("{base}/*rest"), handler.clone());
        if base.is_empty() {
            self.routes_mut().add(None, "/", handler);
        }
        self
    }

    /// Wraps everything added so far, and every later route, in `layer`: a
    /// [`Middleware`] (a function of the request and [`Next`], or async middleware
    /// made by [`middleware::from_fn`]) or a `tower::Layer` whose service speaks `http`
    /// types, such as tower-http's (see [`middleware`]).
    ///
    /// The last layer added runs first.
    ///
    /// # Panics
    ///
    /// When the app has served requests.
    #[must_use]
    pub fn layer<M>(mut self, layer: impl IntoMiddleware<M>) -> Self {
        self.chain_mut()
            .middleware
            .insert(0, layer.into_middleware());
        self
    }

    fn chain_mut(&mut self) -> &mut Chain {
        Arc::get_mut(&mut self.chain).expect("an app is built before it serves requests")
    }

    fn routes_mut(&mut self) -> &mut Routes {
        &mut self.chain_mut().routes
    }

    /// Registers `value` as shared state, reached by handlers through
    /// [`Read<T>`](crate::state::Read) and [`Write<T>`](crate::state::Write) in their
    /// signatures; see [`state`](crate::state). Registration order is the global lock
    /// order.
    ///
    /// # Panics
    ///
    /// When a `T` is registered already, or the app has served requests.
    #[must_use]
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.states_mut().insert(value);
        self
    }

    /// Registers `value` as shared state handed out by clone: a handler takes it as
    /// [`State<T>`](crate::State), which clones it per request and takes no lock. For
    /// handles that are shared already (an `Arc`, a pool, a client); a value handlers
    /// change goes through [`App::state`] and its locks instead.
    ///
    /// A type is registered one way only: `App::state` and `App::with_state` share one
    /// namespace, so `State<T>` and `Read<T>` never name two different values.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use proscenium::{App, State};
    ///
    /// let app = App::new()
    ///     .with_state(Arc::<str>::from("db://primary"))
    ///     .get("/db", |State(url): State<Arc<str>>| async move { url.to_string() });
    /// assert_eq!(app.routes().next().unwrap().to_string().trim_end(),
    ///     "GET     /db                              async     stateless Arc<str> (state)");
    /// ```
    ///
    /// # Panics
    ///
    /// When a `T` is registered already (by either method), or the app has served
    /// requests.
    #[must_use]
    pub fn with_state<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.states_mut().insert_cloned(value);
        self
    }

    /// Sets how long a write lock may be held before it is logged with its route
    /// (100 ms by default).
    ///
    /// # Panics
    ///
    /// When the app has served requests.
    #[must_use]
    pub fn write_hold_warning(mut self, after: std::time::Duration) -> Self {
        self.states_mut().write_hold_warning = after;
        self
    }

    /// Adds a section `name` to `/_status` (served when the diagnostic tools are on):
    /// what `read` returns at each request, as JSON — a stage graph's
    /// [`GraphMonitor::stats`](crate::stage::GraphMonitor::stats), a cache's size.
    ///
    /// # Examples
    ///
    /// ```
    /// let app = proscenium::App::new().status("jobs", || serde_json::json!({"queued": 0}));
    /// ```
    ///
    /// # Panics
    ///
    /// When `name` is one of `/_status`'s own keys (`server`, `version`, `pid`,
    /// `loops`) or a section already added.
    #[must_use]
    pub fn status<T, F>(mut self, name: &'static str, read: F) -> Self
    where
        T: serde::Serialize,
        F: Fn() -> T + Send + Sync + 'static,
    {
        assert!(
            !STATUS_KEYS.contains(&name),
            "`{name}` is a key of /_status itself"
        );
        assert!(
            self.status.iter().all(|(taken, _)| *taken != name),
            "the /_status section `{name}` is added twice"
        );
        let reader: StatusReader = Arc::new(move || {
            serde_json::to_value(read())
                .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }))
        });
        self.status.push((name, reader));
        self
    }

    fn states_mut(&mut self) -> &mut crate::shared::States {
        Arc::get_mut(&mut self.routes_mut().states)
            .expect("state is registered before the app serves requests")
    }

    /// Checks that every state a route takes is registered.
    ///
    /// # Errors
    ///
    /// The first route taking state the app does not have, named.
    pub fn check_state(&self) -> Result<(), String> {
        self.chain.routes.resolve_all()
    }

    /// Returns the registered routes in registration order.
    pub fn routes(&self) -> impl Iterator<Item = &RouteInfo> {
        self.chain.routes.infos()
    }

    /// Handles one request: middleware, routing, handler.
    pub fn call(&self, req: Request) -> Reply {
        Next::start(&self.chain).run(req)
    }

    /// Returns a label such as `GET /fib` for a route id, for logs.
    pub(crate) fn route_label(&self, id: u32) -> String {
        self.chain.routes.label(id)
    }
}

impl crate::http::response::Respond for App {
    fn respond(&self, req: Request) -> crate::http::Soon<Response, LocalResponseFuture> {
        self.call(req).0
    }

    fn label(&self, id: u32) -> String {
        self.route_label(id)
    }

    fn streams(&self, req: &Request) -> bool {
        self.chain.routes.streams(req)
    }
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("routes", &self.chain.routes.infos().count())
            .field("middleware", &self.chain.middleware.len())
            .finish()
    }
}
