//! The route table: path patterns matched with `matchit`, then the method.
//!
//! Each registered (method, pattern) pair gets a route id, its index in `entries`; the
//! watchdog and the `routes` listing name routes by it.

use std::sync::{Arc, OnceLock};

use http::header::{self, HeaderValue};
use http::{Method, StatusCode};

use super::handler::{BoxHandler, Mode};
use super::response::{IntoResponse, Reply, error};
use super::then::call_holding;
use crate::http::Request;
use crate::rt::watchdog;
use crate::shared::{Class, LockSet, StateAccess, States};

/// One registered route, as `proscenium routes` lists it.
#[derive(Debug, Clone)]
pub struct RouteInfo {
    /// The method, or `None` for a route that takes any method.
    pub method: Option<Method>,
    /// The path pattern as registered.
    pub pattern: String,
    /// Where its handler runs.
    pub mode: Mode,
    /// The shared state its handler takes, in signature order.
    pub state: Vec<StateAccess>,
    /// Whether its handler takes the body as it arrives (a `BodyStream`), rather than
    /// the body gathered whole before it runs.
    pub streams: bool,
}

impl RouteInfo {
    /// Stateless, reading or writing, by the state its handler takes.
    pub fn class(&self) -> Class {
        Class::of(&self.state)
    }
}

impl std::fmt::Display for RouteInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let method = self.method.as_ref().map_or("*", Method::as_str);
        write!(
            f,
            "{method:<7} {:<32} {:<9} {:<9}",
            self.pattern,
            self.mode,
            self.class()
        )?;
        for (i, s) in self.state.iter().enumerate() {
            let access = match s.access() {
                Some(crate::shared::Access::Read) => "read",
                Some(crate::shared::Access::Write) => "write",
                None => "state",
            };
            write!(
                f,
                "{}{} ({access})",
                if i == 0 { " " } else { ", " },
                s.name()
            )?;
        }
        if self.streams {
            f.write_str(" [streams its body]")?;
        }
        Ok(())
    }
}

struct Entry {
    info: RouteInfo,
    handler: BoxHandler,
    /// The route's lock set, resolved against the app's states on first use (or at
    /// start-up, by [`Routes::resolve_all`]).
    locks: OnceLock<Result<Arc<LockSet>, String>>,
}

/// The methods registered for one path pattern.
#[derive(Default)]
struct Endpoint {
    methods: Vec<(Method, u32)>,
    any: Option<u32>,
}

#[derive(Default)]
pub(crate) struct Routes {
    matcher: matchit::Router<usize>,
    by_pattern: std::collections::HashMap<String, usize>,
    endpoints: Vec<Endpoint>,
    entries: Vec<Entry>,
    fallback: Option<u32>,
    pub(crate) states: Arc<States>,
    /// A table inside a nested app's middleware ([`Routes::only`]).
    is_inner: bool,
}

/// A route table taken apart by [`Routes::into_parts`].
pub(crate) struct Parts {
    pub(crate) routes: Vec<(RouteInfo, BoxHandler)>,
    pub(crate) fallback: Option<BoxHandler>,
    pub(crate) states: Arc<States>,
}

impl Routes {
    /// Registers `handler` for `method` (or any method) at `pattern`.
    ///
    /// # Panics
    ///
    /// When the pattern is invalid or conflicts with another, or the pair is registered
    /// twice: a programming error, found at start-up.
    pub(crate) fn add(&mut self, method: Option<Method>, pattern: &str, handler: BoxHandler) {
        let id = self.push(method.clone(), pattern, handler);
        let path = to_matchit(pattern);
        let next = self.endpoints.len();
        let endpoint = *self.by_pattern.entry(path.clone()).or_insert(next);
        if endpoint == next {
            if let Err(e) = self.matcher.insert(&path, endpoint) {
                panic!("invalid route `{pattern}`: {e}");
            }
            self.endpoints.push(Endpoint::default());
        }
        let endpoint = &mut self.endpoints[endpoint];
        match method {
            Some(m) if endpoint.methods.iter().any(|(have, _)| *have == m) => {
                panic!("route `{m} {pattern}` registered twice")
            }
            Some(m) => endpoint.methods.push((m, id)),
            None if endpoint.any.is_some() => panic!("route `* {pattern}` registered twice"),
            None => endpoint.any = Some(id),
        }
    }

    /// Registers the handler for requests no route matches.
    pub(crate) fn set_fallback(&mut self, handler: BoxHandler) {
        self.fallback = Some(self.push(None, "<fallback>", handler));
    }

    fn push(&mut self, method: Option<Method>, pattern: &str, handler: BoxHandler) -> u32 {
        let (mode, streams) = (handler.mode(), handler.streams_body());
        let mut state: Vec<StateAccess> = Vec::new();
        for s in handler.state_accesses() {
            match state.iter().find(|t| t.type_id() == s.type_id()) {
                // A cloned `State<T>` asked for twice (by the handler and by an
                // extractor of its own, say) is one clone more, not a second lock.
                Some(taken) if taken.access().is_none() && s.access().is_none() => {}
                Some(_) => panic!("route `{pattern}` takes state `{}` twice", s.name()),
                None => state.push(s),
            }
        }
        self.entries.push(Entry {
            info: RouteInfo {
                method,
                pattern: pattern.to_owned(),
                mode,
                state,
                streams,
            },
            handler,
            locks: OnceLock::new(),
        });
        u32::try_from(self.entries.len() - 1).expect("fewer than 4 billion routes")
    }

    /// Resolves every stateful route's lock set now, so a route taking state the app
    /// never registered stops the server at start-up instead of failing requests.
    pub(crate) fn resolve_all(&self) -> Result<(), String> {
        (0..self.entries.len()).try_for_each(|id| self.locks(id as u32).map(drop))
    }

    fn locks(&self, id: u32) -> Result<Option<&Arc<LockSet>>, String> {
        let entry = &self.entries[id as usize];
        if entry.info.state.is_empty() {
            return Ok(None);
        }
        entry
            .locks
            .get_or_init(|| self.states.resolve(&entry.info.state, &self.label(id)))
            .as_ref()
            .map(Some)
            .map_err(Clone::clone)
    }

    /// Returns whether the route `req` goes to takes its body as it arrives.
    pub(crate) fn streams(&self, req: &Request) -> bool {
        let id = match self.matcher.at(req.uri().path()) {
            Ok(found) => select(&self.endpoints[*found.value], req.method()),
            Err(_) => self.fallback,
        };
        id.is_some_and(|id| self.entries[id as usize].info.streams)
    }

    /// Routes `req` to its handler and calls it.
    pub(crate) fn call(&self, mut req: Request) -> Reply {
        // Only asterisk-form has the path `*` (origin and absolute forms start theirs
        // with `/`); comparing the path alone spares `Uri == "*"`, which rebuilds the
        // target to compare on every request.
        if req.uri().path() == "*" {
            return Reply::ready(options_asterisk());
        }
        let Ok(found) = self.matcher.at(req.uri().path()) else {
            return match self.fallback {
                Some(id) => self.invoke(id, req),
                None => Reply::ready(error(StatusCode::NOT_FOUND, "no route for this path")),
            };
        };
        let endpoint = &self.endpoints[*found.value];
        let Some(id) = select(endpoint, req.method()) else {
            return Reply::ready(method_not_allowed(endpoint));
        };
        // Most routes have no parameters: skipping the empty collection spares its
        // work on every request.
        if !found.params.is_empty() {
            req.set_params(
                found
                    .params
                    .iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect(),
            );
        }
        self.invoke(id, req)
    }

    fn invoke(&self, id: u32, req: Request) -> Reply {
        if !self.is_inner {
            watchdog::set_route(id);
        }
        let handler = &self.entries[id as usize].handler;
        match self.locks(id) {
            Ok(None) => handler.call(req),
            Ok(Some(set)) => call_holding(set, handler, req),
            Err(why) => {
                tracing::error!(%why, "route not served");
                Reply::ready(error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "shared state unavailable",
                ))
            }
        }
    }

    /// Returns a label such as `GET /fib` for a route id.
    pub(crate) fn label(&self, id: u32) -> String {
        match self.entries.get(id as usize) {
            Some(e) => format!(
                "{} {}",
                e.info.method.as_ref().map_or("*", Method::as_str),
                e.info.pattern
            ),
            None => "(routing)".to_owned(),
        }
    }

    /// Takes the table apart for another app to absorb: its routes in registration
    /// order with their handlers, its fallback, and its states.
    pub(crate) fn into_parts(self) -> Parts {
        let fallback = self.fallback.map(|id| id as usize);
        let mut routes = Vec::new();
        let mut taken = None;
        for (id, entry) in self.entries.into_iter().enumerate() {
            if Some(id) == fallback {
                taken = Some(entry.handler);
            } else {
                routes.push((entry.info, entry.handler));
            }
        }
        Parts {
            routes,
            fallback: taken,
            states: self.states,
        }
    }

    /// Returns whether a route is registered at exactly `pattern`.
    pub(crate) fn has_pattern(&self, pattern: &str) -> bool {
        self.by_pattern.contains_key(&to_matchit(pattern))
    }

    /// Returns whether the table has a fallback.
    pub(crate) fn has_fallback(&self) -> bool {
        self.fallback.is_some()
    }

    /// A table whose fallback is `handler`, answering every request: what a nested
    /// app's middleware wraps. The outer route holds the locks and names the route for
    /// the watchdog, so this one does neither.
    pub(crate) fn only(handler: BoxHandler) -> Self {
        let mut routes = Self {
            is_inner: true,
            ..Self::default()
        };
        routes.entries.push(Entry {
            info: RouteInfo {
                method: None,
                pattern: "<nested>".to_owned(),
                mode: handler.mode(),
                state: Vec::new(),
                streams: handler.streams_body(),
            },
            handler,
            locks: OnceLock::new(),
        });
        routes.fallback = Some(0);
        routes
    }

    pub(crate) fn infos(&self) -> impl Iterator<Item = &RouteInfo> {
        self.entries.iter().map(|e| &e.info)
    }
}

/// Picks the route for `method`: an exact match, GET for HEAD, or the any-method route.
fn select(endpoint: &Endpoint, method: &Method) -> Option<u32> {
    let find = |m: &Method| {
        endpoint
            .methods
            .iter()
            .find(|(have, _)| have == m)
            .map(|(_, id)| *id)
    };
    find(method)
        .or_else(|| {
            (method == Method::HEAD)
                .then(|| find(&Method::GET))
                .flatten()
        })
        .or(endpoint.any)
}

/// 405 with the methods the path allows (RFC 9110 §15.5.6).
fn method_not_allowed(endpoint: &Endpoint) -> super::Response {
    let mut allow: Vec<&str> = endpoint.methods.iter().map(|(m, _)| m.as_str()).collect();
    if allow.contains(&"GET") && !allow.contains(&"HEAD") {
        allow.push("HEAD");
    }
    let mut res = error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed for this path",
    );
    if let Ok(value) = HeaderValue::from_str(&allow.join(", ")) {
        res.headers_mut().insert(header::ALLOW, value);
    }
    res
}

/// `OPTIONS *` asks about the server as a whole (RFC 9110 §9.3.7).
fn options_asterisk() -> super::Response {
    let allow = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS";
    (StatusCode::OK, [(header::ALLOW, allow)], ()).into_response()
}

/// Translates `:name` and `*name` segments to matchit's `{name}` and `{*name}`.
pub(crate) fn to_matchit(pattern: &str) -> String {
    pattern
        .split('/')
        .map(|segment| {
            if let Some(name) = segment.strip_prefix(':') {
                format!("{{{name}}}")
            } else if let Some(name) = segment.strip_prefix('*') {
                format!("{{*{name}}}")
            } else {
                segment.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translates_colon_and_star_segments() {
        assert_eq!(to_matchit("/picture/:id/likes"), "/picture/{id}/likes");
        assert_eq!(to_matchit("/static/*path"), "/static/{*path}");
        assert_eq!(to_matchit("/a/{b}"), "/a/{b}");
    }

    #[test]
    fn a_cloned_state_taken_twice_is_listed_once_and_a_lock_taken_twice_panics() {
        use crate::app::state_extractors::{Read, State};
        use crate::{App, inline};

        let app = App::new()
            .with_state(7_u32)
            .get("/", inline(|_: State<u32>, _: State<u32>| "ok"));
        let route = app.routes().next().expect("a route");
        assert_eq!(route.state.len(), 1, "{:?}", route.state);

        let twice = std::panic::catch_unwind(|| {
            App::new()
                .state(7_u64)
                .get("/", inline(|_: Read<u64>, _: Read<u64>| "ok"))
        });
        assert!(twice.is_err(), "a lock taken twice is refused");
    }
}
