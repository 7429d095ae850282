//! Composition: one app's routes, fallback, middleware and state taken into another,
//! under a prefix ([`App::nest`]) or beside its own ([`App::merge`]).
//!
//! The routes are flattened into the outer table, so matching stays one lookup and
//! `proscenium routes` lists them all. A nested app's middleware wraps each of its
//! routes ([`Layered`]), never the outer app's.

use std::sync::Arc;

use super::App;
use super::handler::{BoxHandler, ErasedHandler, Mode};
use super::middleware::{Chain, Middleware};
use super::response::Reply;
use super::router::{Parts, Routes};
use crate::http::Request;
use crate::shared::StateAccess;

/// Why an app being composed is its only owner: apps are composed while they are built.
const BUILT: &str = "a composed app is composed before it serves requests";

impl App {
    /// Serves `app`'s routes under `prefix`: its route `/users/:id` answers
    /// `{prefix}/users/:id`, its `/` answers `{prefix}` itself.
    ///
    /// Its fallback answers the paths under `prefix` that none of its routes match (the
    /// outer fallback answers them when it has none); its middleware wraps its routes
    /// only; its state joins this app's. Handlers and middleware see the whole path.
    ///
    /// # Examples
    ///
    /// ```
    /// use proscenium::{App, inline};
    ///
    /// let api = App::new()
    ///     .get("/users", inline(|| "users"))
    ///     .fallback(inline(|| (proscenium::StatusCode::NOT_FOUND, "no such API")));
    /// let app = App::new().get("/", inline(|| "home")).nest("/api", api);
    /// let patterns: Vec<_> = app.routes().map(|r| r.pattern.clone()).collect();
    /// assert_eq!(patterns, ["/", "/api/users", "/api", "/api/*__nested_fallback"]);
    /// ```
    ///
    /// # Panics
    ///
    /// When `prefix` is not a path (`/api`), a route conflicts with one of this app's,
    /// both apps register state of one type, or `app` mounts a tower service (mount it
    /// on this app under the whole prefix instead).
    #[must_use]
    pub fn nest(self, prefix: &str, app: App) -> Self {
        let prefix = prefix.trim_end_matches('/');
        assert!(
            prefix.starts_with('/') && !prefix.contains(['*', ':']),
            "nest prefix `{prefix}` is not a literal path such as `/api`"
        );
        self.absorb(prefix, app)
    }

    /// Serves `app`'s routes beside this app's, its fallback too when this app has none,
    /// its middleware around its routes only, its state joined to this app's.
    ///
    /// # Examples
    ///
    /// ```
    /// use proscenium::{App, inline};
    ///
    /// let users = App::new().get("/users", inline(|| "users"));
    /// let app = App::new().get("/", inline(|| "home")).merge(users);
    /// assert_eq!(app.routes().count(), 2);
    /// ```
    ///
    /// # Panics
    ///
    /// When a route of `app` is one of this app's (named, as adding it twice does),
    /// both apps have a fallback, or both register state of one type.
    #[must_use]
    pub fn merge(self, app: App) -> Self {
        self.absorb("", app)
    }

    fn absorb(mut self, prefix: &str, app: App) -> Self {
        let App { chain, status, .. } = app;
        let Chain { routes, middleware } =
            Arc::try_unwrap(chain).unwrap_or_else(|_| unreachable!("{BUILT}"));
        let Parts {
            routes,
            fallback,
            states,
        } = routes.into_parts();
        let states = Arc::try_unwrap(states).unwrap_or_else(|_| unreachable!("{BUILT}"));
        self.states_mut().absorb(states);
        for (info, handler) in routes {
            assert!(
                prefix.is_empty() || info.mode != Mode::Service,
                "a nested app mounts a service at `{}`: mount it on the outer app at `{prefix}{}`",
                info.pattern,
                info.pattern
            );
            let pattern = match info.pattern.as_str() {
                "/" if !prefix.is_empty() => prefix.to_owned(),
                pattern => format!("{prefix}{pattern}"),
            };
            self.routes_mut()
                .add(info.method, &pattern, Layered::wrap(handler, &middleware));
        }
        if let Some(fallback) = fallback {
            self.absorb_fallback(prefix, Layered::wrap(fallback, &middleware));
        }
        for (name, reader) in status {
            assert!(
                self.status.iter().all(|(taken, _)| *taken != name),
                "the /_status section `{name}` is added twice"
            );
            self.status.push((name, reader));
        }
        self
    }

    /// Makes `fallback` answer what no route under `prefix` matches, or everything
    /// unmatched when merging.
    fn absorb_fallback(&mut self, prefix: &str, fallback: BoxHandler) {
        if prefix.is_empty() {
            assert!(
                !self.chain.routes.has_fallback(),
                "both merged apps have a fallback"
            );
            self.routes_mut().set_fallback(fallback);
            return;
        }
        if !self.chain.routes.has_pattern(prefix) {
            self.routes_mut().add(None, prefix, fallback.clone());
        }
        self.routes_mut()
            .add(None, &format!("{prefix}/*__nested_fallback"), fallback);
    }
}

/// A nested app's handler inside that app's middleware.
struct Layered {
    /// The middleware around a table whose only entry is the handler.
    app: App,
    mode: Mode,
    state: Vec<StateAccess>,
    streams: bool,
}

impl Layered {
    /// Returns `handler` wrapped in `middleware`, or as it is when there is none.
    fn wrap(handler: BoxHandler, middleware: &[Arc<dyn Middleware>]) -> BoxHandler {
        if middleware.is_empty() {
            return handler;
        }
        let (mode, state, streams) = (
            handler.mode(),
            handler.state_accesses(),
            handler.streams_body(),
        );
        Arc::new(Self {
            app: App {
                chain: Arc::new(Chain {
                    routes: Routes::only(handler),
                    middleware: middleware.to_vec(),
                }),
                ..App::default()
            },
            mode,
            state,
            streams,
        })
    }
}

impl ErasedHandler for Layered {
    fn call(&self, req: Request) -> Reply {
        self.app.call(req)
    }

    fn mode(&self) -> Mode {
        self.mode
    }

    // The outer route takes these locks before the middleware runs; the handler finds
    // them in the request, as it would unwrapped.
    fn state_accesses(&self) -> Vec<StateAccess> {
        self.state.clone()
    }

    fn streams_body(&self) -> bool {
        self.streams
    }
}
