//! An app written in Lua: a script adding routes to the global `app`
//! (`app:get(pattern, [options,] handler)`, `post`, `put`, `patch`, `delete`, `any`,
//! `route(method, ...)`; `options.state` declares the route's use of the shared
//! values, see [`bridge`](super::bridge)), routed here with the same patterns as [`App`](crate::App)'s
//! (`/hello/:name`, `/files/*path`); and feeds of the hub's posts
//! (`app:events(path, topics)`, `app:websocket(path, topics)`), served natively.
//! Each state loads the script once; when it or a module it `require`d changes,
//! states load it again — its routes too.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use http::{Method, StatusCode};
use std::time::Instant;

use mlua::{ChunkMode, Function, Lua, Table, Value};

use super::bridge::{self, Bridge};
use super::pool::Pool;
use super::sandbox::{Loaded, Sandboxed};
use super::stamp::{self, Stamp};
use super::threads::{Ran, Turn};
use super::{LuaSpec, Next, convert, sandbox};
use crate::app::{
    FromRequestHead as _, Handler, IntoResponse as _, Mode, Reply, error, to_matchit,
};
use crate::http::{Request, Response};
use crate::hub::Hub;
use crate::shared::LockSet;
use crate::sse::LastEventId;
use crate::ws::WebSocketUpgrade;

/// Defines `app` and returns the list its methods add routes to.
const PRELUDE: &str = r#"
local routes = {}
app = {}
function app:route(method, pattern, options, handler)
  if handler == nil then
    options, handler = nil, options
  end
  routes[#routes + 1] = { method = method, pattern = pattern, options = options, handler = handler }
end
for _, method in ipairs({ "get", "post", "put", "patch", "delete", "head", "options" }) do
  app[method] = function(self, pattern, options, handler)
    self:route(string.upper(method), pattern, options, handler)
  end
end
function app:any(pattern, options, handler)
  self:route("*", pattern, options, handler)
end
function app:events(path, topics)
  routes[#routes + 1] = { method = "GET", pattern = path, topics = topics, transport = "events" }
end
function app:websocket(path, topics)
  routes[#routes + 1] = { method = "GET", pattern = path, topics = topics, transport = "websocket" }
end
return routes
"#;

/// An app whose routes a Lua script defines (see the [module docs](super)); what no
/// route matches goes to the handler given to [`or_else`](Self::or_else), or gets 404.
#[derive(Clone)]
pub struct LuaApp(Arc<Inner>);

#[derive(Clone)]
struct Inner {
    file: PathBuf,
    dir: PathBuf,
    pool: Arc<Pool<Routes>>,
    next: Option<Next>,
    /// The hub `proscenium.publish` posts to and feed routes read, and the shared
    /// values.
    bridge: Bridge,
}

/// A Lua app that could not be loaded: the script's error, with its file and line.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct LuaAppError(String);

/// What a route runs.
enum Target {
    /// A handler, and the locks its declared use of the shared values takes.
    Lua(Function, Option<Arc<LockSet>>),
    /// The hub's posts to topics matching a pattern, as an event stream or over a
    /// WebSocket.
    Feed { topics: String, websocket: bool },
}

/// The routes one state loaded, and the files they came from.
struct Routes {
    handlers: Vec<Target>,
    matcher: matchit::Router<usize>,
    /// By endpoint: the methods (`None`: any) and their handlers.
    endpoints: Vec<Vec<(Option<Method>, usize)>>,
    /// The script and the modules it loaded, stamped when it was loaded.
    files: Vec<(PathBuf, Stamp)>,
    /// When the stamps were last compared with the files'.
    checked: Instant,
}

impl std::fmt::Debug for LuaApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LuaApp")
            .field("file", &self.0.file)
            .field("pool", &self.0.pool)
            .finish_non_exhaustive()
    }
}

impl LuaApp {
    /// Loads the app in `file`, with `spec`'s budgets for its requests, an in-process
    /// hub for its posts and feeds, and shared values of its own.
    ///
    /// # Errors
    ///
    /// The script cannot be read, does not compile, fails, or defines a bad route.
    pub fn load(file: impl AsRef<Path>, spec: &LuaSpec) -> Result<Self, LuaAppError> {
        Self::load_with(file, spec, &Bridge::new(Hub::new()).bounded_by(spec))
    }

    /// Loads the app in `file` as [`load`](Self::load) does, reaching `bridge`'s hub
    /// (one shared with the app's other routes, or through Redis with other replicas)
    /// and values (shared with the server's Lua pages).
    ///
    /// # Errors
    ///
    /// The script cannot be read, does not compile, fails, or defines a bad route.
    pub fn load_with(
        file: impl AsRef<Path>,
        spec: &LuaSpec,
        bridge: &Bridge,
    ) -> Result<Self, LuaAppError> {
        let file = file.as_ref();
        let file = std::path::absolute(file).unwrap_or_else(|_| file.to_owned());
        let dir = file.parent().map_or_else(PathBuf::new, Path::to_owned);
        let inner = Inner {
            file,
            dir,
            pool: Arc::new(Pool::new(spec)),
            next: None,
            bridge: bridge.clone(),
        };
        let slot = inner
            .pool
            .take(|instructions| inner.state(instructions))
            .map_err(|failure| LuaAppError(failure.describe()))?;
        inner.pool.give(slot);
        Ok(Self(Arc::new(inner)))
    }

    /// Hands what no route matches to `next` (static files, pages, CGI scripts).
    #[must_use]
    pub fn or_else<T>(self, next: impl Handler<T>) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.0);
        inner.next = Some(Arc::new(move |req| next.call(req)));
        Self(Arc::new(inner))
    }

    /// Answers `req` on a script thread.
    fn serve(&self, req: Request) -> Reply {
        let app = self.clone();
        self.0.pool.on_thread(move |turn| app.run(turn, req))
    }

    /// Answers `req` on this script thread: routed with the routes of the state it
    /// takes (loaded again if a file changed), then its route's handler run.
    fn run(&self, turn: &Turn<'_>, mut req: Request) -> Ran {
        let inner = &*self.0;
        let name = inner.file.display().to_string();
        let mut slot = match inner.pool.take(|instructions| inner.state(instructions)) {
            Ok(slot) => slot,
            Err(failure) => return Ran::Answer(failure.answer(&name)),
        };
        let routes = &mut slot.data;
        if stamp::due(&mut routes.checked)
            && routes
                .files
                .iter()
                .any(|(path, known)| stamp::take(path) != *known)
        {
            tracing::info!("lua: {name} changed: loading it again");
            inner.pool.renew();
            slot = match inner.pool.take(|instructions| inner.state(instructions)) {
                Ok(slot) => slot,
                Err(failure) => return Ran::Answer(failure.answer(&name)),
            };
        }
        let (index, params) = match slot.data.route(req.method(), req.uri().path()) {
            Found::Route(index, params) => (index, params),
            Found::WrongMethod => {
                inner.pool.give(slot);
                return Ran::Answer(error(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "no route for this method",
                ));
            }
            Found::Nothing => {
                inner.pool.give(slot);
                let Some(next) = inner.next.clone() else {
                    return Ran::Answer(error(StatusCode::NOT_FOUND, "no route for this path"));
                };
                return Ran::Elsewhere(Box::new(move || next(req)));
            }
        };
        let (handler, locks) = match &slot.data.handlers[index] {
            Target::Lua(handler, locks) => (handler.clone(), locks.clone()),
            Target::Feed { topics, websocket } => {
                let (topics, websocket) = (topics.clone(), *websocket);
                inner.pool.give(slot);
                let app = self.clone();
                return Ran::Elsewhere(Box::new(move || {
                    Reply::ready(app.0.feed(&req, &topics, websocket))
                }));
            }
        };
        req.set_params(params);
        let answer = convert::respond(
            turn,
            &inner.pool,
            slot,
            (&handler, locks.as_ref()),
            &req,
            &name,
        );
        Ran::Answer(answer)
    }
}

impl Inner {
    /// A state with the app loaded in it, its requests held to `instructions`.
    fn state(&self, instructions: usize) -> mlua::Result<(Sandboxed, Routes)> {
        let state = sandbox::state(&self.dir, &self.bridge, instructions)?;
        let routes = state.run(|| load(&state.lua, &self.file, &self.dir, &self.bridge))?;
        Ok((state, routes))
    }
}

impl Inner {
    /// Answers a feed route: the hub's posts to `topics`, as an event stream resumed
    /// after `Last-Event-ID`, or over the WebSocket the request asks for.
    fn feed(&self, req: &Request, topics: &str, websocket: bool) -> Response {
        if websocket {
            match WebSocketUpgrade::from_request_head(req) {
                Ok(ws) => self.bridge.hub().websocket(topics, ws),
                Err(refused) => refused.into_response(),
            }
        } else {
            let Ok(last) = LastEventId::from_request_head(req);
            self.bridge.hub().sse(topics, &last)
        }
    }
}

/// What a request's method and path lead to.
enum Found {
    Route(usize, Vec<(String, String)>),
    WrongMethod,
    Nothing,
}

impl Routes {
    fn route(&self, method: &Method, path: &str) -> Found {
        let Ok(matched) = self.matcher.at(path) else {
            return Found::Nothing;
        };
        let endpoint = &self.endpoints[*matched.value];
        let exact = |m: &Method| {
            endpoint
                .iter()
                .find(|(have, _)| have.as_ref() == Some(m))
                .map(|(_, index)| *index)
        };
        let any = endpoint
            .iter()
            .find(|(have, _)| have.is_none())
            .map(|(_, index)| *index);
        let index = exact(method)
            .or_else(|| {
                (method == Method::HEAD)
                    .then(|| exact(&Method::GET))
                    .flatten()
            })
            .or(any);
        match index {
            Some(index) => Found::Route(
                index,
                matched
                    .params
                    .iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect(),
            ),
            None => Found::WrongMethod,
        }
    }
}

/// Runs the app's script in `lua` and reads the routes it added, each declared use
/// of the shared values resolved to its locks on `bridge`.
fn load(lua: &Lua, file: &Path, dir: &Path, bridge: &Bridge) -> mlua::Result<Routes> {
    let list: Table = lua.load(PRELUDE).set_name("=prelude").eval()?;
    // Stamped before it is read: a change made meanwhile is seen as one.
    let stamp = stamp::take(file);
    let text = std::fs::read(file)
        .map_err(|e| mlua::Error::runtime(format!("{}: {e}", file.display())))?;
    let shown = file.strip_prefix(dir).unwrap_or(file);
    lua.load(text)
        .set_mode(ChunkMode::Text)
        .set_name(format!("@{}", shown.display()))
        .exec()?;
    let mut routes = Routes {
        handlers: Vec::new(),
        matcher: matchit::Router::new(),
        endpoints: Vec::new(),
        files: vec![(file.to_owned(), stamp)],
        checked: Instant::now(),
    };
    let mut by_path: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for route in list.sequence_values::<Table>() {
        let route = route?;
        let method: String = route.get("method")?;
        let Value::String(pattern) = route.get::<Value>("pattern")? else {
            return Err(mlua::Error::runtime(format!(
                "{}: a route's path must be a string",
                shown.display()
            )));
        };
        let pattern = pattern.to_str()?.to_owned();
        let transport: Option<String> = route.get("transport")?;
        let target = match transport {
            Some(transport) => match route.get::<Value>("topics")? {
                Value::String(topics) => Target::Feed {
                    topics: topics.to_str()?.to_owned(),
                    websocket: transport == "websocket",
                },
                _ => {
                    return Err(mlua::Error::runtime(format!(
                        "{}: app:{transport}(path, topics) takes a path and a topic pattern",
                        shown.display()
                    )));
                }
            },
            None => match (
                route.get::<Value>("options")?,
                route.get::<Value>("handler")?,
            ) {
                (options @ (Value::Nil | Value::Table(_)), Value::Function(handler)) => {
                    let route = format!("{method} {pattern}");
                    let what = format!("{}: {route}", shown.display());
                    let access = bridge::declared(options.as_table(), &what)?;
                    let locks = access.map(|access| bridge.locks(access, &route));
                    Target::Lua(handler, locks)
                }
                _ => {
                    return Err(mlua::Error::runtime(format!(
                        "{}: app:{}(pattern, [options,] handler) takes a path, a table and a function",
                        shown.display(),
                        method.to_lowercase()
                    )));
                }
            },
        };
        let method = match method.as_str() {
            "*" => None,
            name => Some(Method::from_bytes(name.as_bytes()).map_err(mlua::Error::external)?),
        };
        let path = to_matchit(&pattern);
        let endpoint = match by_path.get(&path) {
            Some(&endpoint) => endpoint,
            None => {
                let endpoint = routes.endpoints.len();
                routes.matcher.insert(path.clone(), endpoint).map_err(|e| {
                    mlua::Error::runtime(format!("{}: route {pattern}: {e}", shown.display()))
                })?;
                routes.endpoints.push(Vec::new());
                by_path.insert(path, endpoint);
                endpoint
            }
        };
        if routes.endpoints[endpoint].iter().any(|(m, _)| *m == method) {
            return Err(mlua::Error::runtime(format!(
                "{}: route {pattern} defined twice for one method",
                shown.display()
            )));
        }
        routes.endpoints[endpoint].push((method, routes.handlers.len()));
        routes.handlers.push(target);
    }
    if let Some(loaded) = lua.app_data_ref::<Loaded>() {
        routes
            .files
            .extend(loaded.0.lock().expect("not poisoned").iter().cloned());
    }
    Ok(routes)
}

impl Handler<LuaApp> for LuaApp {
    fn call(&self, req: Request) -> Reply {
        self.serve(req)
    }

    /// Async: its requests are awaited on their own thread, their scripts run on
    /// script threads.
    fn mode(&self) -> Mode {
        Mode::Async
    }
}
