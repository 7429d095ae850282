//! Embedded Lua 5.4 (mlua, vendored): `.lua` pages below the served directory, and
//! apps written in Lua — routes defined by a script, the Rack of Proscenium.
//!
//! A page is a file defining `handle(request)`; it returns a body (a string: 200,
//! HTML), or a status, header fields and a body, or a table with `status`, `headers`
//! and `body`. An app is a script adding routes to the global `app`:
//!
//! ```lua
//! app:get("/hello/:name", function(req)
//!   return "Hello, " .. proscenium.html.escape(req.params.name)
//! end)
//! app:post("/echo", function(req)
//!   return 200, { ["content-type"] = "application/json" }, req.body
//! end)
//! ```
//!
//! The request is a table: `method`, `path`, `query` (the raw string), `args` (the
//! query decoded), `headers` (names in lower case), `body`, `params` (a route's),
//! `remote_addr`. `proscenium.json.encode`/`decode`, `proscenium.html.escape` and
//! `proscenium.publish(topic, payload)` (to the pub/sub [hub](crate::hub)) are there
//! for every script; `app:events(path, topics)` and `app:websocket(path, topics)`
//! serve the hub's posts. `proscenium.state.get(name)`, `set(name, value)` and
//! `incr(name [, by])` reach values shared by every state, under the lock classes of
//! Rust routes: a route declares `app:get(path, { state = "read" }, handler)` (or
//! `"write"`), a page `page = { state = "read" }`, and its requests hold the lock the
//! class asks for while the script runs (see [`Bridge`]).
//!
//! Scripts run on script threads of their own, never on a loop or on a thread model's
//! connection thread (`lua/threads.rs`): each app and each set of pages has `[lua] threads`
//! of them (one a core by default) and a bounded queue (`[lua] queue`; full: 503 with
//! `Retry-After`). The request's side — the loop, or the connection's thread — awaits
//! the answer until the request's deadline (`[lua] timeout`, 5 s by default, wall clock,
//! queueing included); past it the client gets 503 and its connection goes on. Each
//! interpreter state serves one request at a time on one thread: states wait in a pool
//! between requests, a script thread takes one, runs the request on it and gives it
//! back, and no state is ever used by two threads at once. A state is sandboxed: no
//! `os.execute`, `io`, `loadfile`, `dofile` or `debug`, `load` of text only, `require`
//! of the app's own directory only, `print` to the log (`[lua] log_lines` and `log_bytes`
//! a request), its library tables read-only. What a script hands Rust as JSON is
//! measured first, in bytes and in depth (127 levels), and the shared values take
//! `[lua] state_memory` bytes at most. Each request has a budget of instructions
//! (`[lua] instructions`) and each state a bound on its memory (`[lua] memory` past
//! what it held when made): past either the request gets 503 and its state is thrown
//! away; a script that fails gets 500, its error — file and line —
//! logged. The C functions that would loop on a count a script chooses without a Lua
//! instruction counted are bounded (`lua/sandbox.rs`); what cannot be bounded — Lua's
//! pattern matcher backtracking on a pattern a client sent — is what the deadline is
//! for: a script still running a margin past it has its thread retired (idle
//! priority, replaced in the pool, at most `[lua] retired` of them alive), so the
//! worst one request can do is hold one script thread until its deadline, and the
//! server, its shutdown included, goes on. Under the staged model the script threads
//! are those of the server graph's *lua* stage, in its cluster `scripts`, and a
//! retired one is stood aside in it (docs/models.md).
//!
//! Why threads of its own rather than the blocking pool: a thread whose script will
//! not stop must be replaced while it runs, lowered in priority and left to exit, and
//! its state must never come back; the blocking pool's threads are neither watched nor
//! replaceable. The hop costs a trivial route about half a microsecond of CPU, 4 %
//! (docs/performance.md, "Scripts").
//!
//! A changed file is loaded again within a second, without a restart.
//!
//! # Example
//!
//! ```no_run
//! use proscenium::App;
//! use proscenium::lua::{LuaApp, LuaSpec};
//!
//! let spec = LuaSpec::default();
//! let lua = LuaApp::load("app.lua", &spec).expect("app.lua loads");
//! let app = App::new().fallback(lua);
//! ```

mod app;
mod bridge;
mod convert;
mod graph;
mod helpers;
mod json;
mod log;
mod pages;
mod pool;
mod readonly;
mod sandbox;
mod stage;
mod stamp;
mod threads;
mod watch;

use http::StatusCode;

pub use self::app::{LuaApp, LuaAppError};
pub use self::bridge::Bridge;
pub use self::graph::{GraphFile, GraphFileError};
pub use self::pages::LuaPages;
pub use self::stage::LuaStage;
pub(crate) use self::threads::{ScriptJob, install_stage, threads as script_threads};
use crate::app::error;
pub use crate::config::LuaSpec;
use crate::counters::Tally;
use crate::http::Response;

/// How running a script went wrong, and what the client is told.
#[derive(Debug)]
enum Failure {
    /// The script failed (its error, with file and line): 500.
    Script(mlua::Error),
    /// It ran past its instruction budget: 503; its state is dropped.
    Instructions,
    /// It ran past its memory budget: 503; its state is dropped.
    Memory,
}

impl Failure {
    /// Sorts an error from a call into Lua.
    fn of(error: mlua::Error, out_of_instructions: bool) -> Self {
        let memory = error.chain().any(|e| {
            matches!(
                e.downcast_ref::<mlua::Error>(),
                Some(mlua::Error::MemoryError(_))
            )
        }) || matches!(error, mlua::Error::MemoryError(_));
        if out_of_instructions {
            Self::Instructions
        } else if memory {
            Self::Memory
        } else {
            Self::Script(error)
        }
    }

    /// Counts a call's outcome for `/metrics`.
    fn tally<R>(result: &Result<R, Self>) {
        let tally = match result {
            Ok(_) => Tally::LuaOk,
            Err(Self::Script(_)) => Tally::LuaScriptError,
            Err(Self::Instructions) => Tally::LuaInstructions,
            Err(Self::Memory) => Tally::LuaMemory,
        };
        tally.add(1);
    }

    /// Whether the state it happened in must be thrown away.
    fn spoils_state(&self) -> bool {
        !matches!(self, Self::Script(_))
    }

    /// Logs it under `name` (the page or route) and answers it.
    fn answer(&self, name: &str) -> Response {
        match self {
            Self::Script(e) => {
                tracing::error!("lua: {name}: {}", one_line(e));
                error(StatusCode::INTERNAL_SERVER_ERROR, "the script failed")
            }
            Self::Instructions => {
                tracing::warn!("lua: {name}: past its instruction budget: stopped");
                error(StatusCode::SERVICE_UNAVAILABLE, "the script ran too long")
            }
            Self::Memory => {
                tracing::warn!("lua: {name}: past its memory budget: stopped");
                error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the script used too much memory",
                )
            }
        }
    }
}

impl Failure {
    /// What went wrong, in one line, for a message at start-up.
    fn describe(&self) -> String {
        match self {
            Self::Script(e) => one_line(e),
            Self::Instructions => "past its instruction budget".to_owned(),
            Self::Memory => "past its memory budget".to_owned(),
        }
    }
}

/// An mlua error as one line: the script's own message (`file:line: what`), without
/// the traceback mlua adds.
fn one_line(error: &mlua::Error) -> String {
    let text = match error {
        mlua::Error::CallbackError { cause, .. } => return one_line(cause),
        mlua::Error::RuntimeError(message) => message.clone(),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    };
    text.lines().next().unwrap_or_default().to_owned()
}

/// What a Lua handler hands on a request that is not its own to: the static files,
/// CGI scripts or pages below it.
type Next = std::sync::Arc<dyn Fn(crate::http::Request) -> crate::app::Reply + Send + Sync>;
