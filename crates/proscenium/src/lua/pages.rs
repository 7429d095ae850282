//! `.lua` pages below a root: a file defining `handle(request)`, compiled once per
//! state and again when it changes, each page in an environment of its own (its
//! globals are its own, `_G` too; the standard ones are read through, read-only: see
//! [`readonly`](super::readonly)). A page declares its use
//! of the shared values with a global `page = { state = "read" }` (or `"write"`; see
//! [`bridge`](super::bridge)).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use mlua::{ChunkMode, Function, Lua, Value};

use super::bridge::{self, Bridge};
use super::pool::Pool;
use super::stamp::{self, Stamp};
use super::threads::{Ran, Turn};
use super::{LuaSpec, Next, convert, readonly, sandbox};
use crate::app::{Handler, Mode, Reply};
use crate::http::{Request, Response};
use crate::hub::Hub;
use crate::shared::LockSet;
use crate::web::StaticFiles;

/// Runs the `.lua` files below a root as pages (see the [module docs](super)); a
/// request for anything else goes to the handler given to [`or_else`](Self::or_else),
/// or gets 404.
#[derive(Clone)]
pub struct LuaPages(Arc<Pages>);

#[derive(Clone)]
struct Pages {
    root: PathBuf,
    files: StaticFiles,
    pool: Arc<Pool<Compiled>>,
    next: Option<Next>,
    bridge: Bridge,
}

/// The pages a state compiled, by file.
type Compiled = HashMap<PathBuf, Page>;

/// A compiled page: its `handle`, the locks its declaration takes, the stamp of the
/// file it came from, and when that stamp was last compared with the file's.
#[derive(Clone)]
struct Page {
    handle: Function,
    locks: Option<Arc<LockSet>>,
    stamp: Stamp,
    checked: Instant,
}

impl std::fmt::Debug for LuaPages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LuaPages")
            .field("root", &self.0.root)
            .field("pool", &self.0.pool)
            .finish_non_exhaustive()
    }
}

impl LuaPages {
    /// Returns a handler running the `.lua` files below `root` with `spec`'s budgets,
    /// an in-process hub and shared values of its own.
    pub fn new(root: impl AsRef<Path>, spec: &LuaSpec) -> Self {
        let root = root.as_ref();
        let root = std::path::absolute(root).unwrap_or_else(|_| root.to_owned());
        Self(Arc::new(Pages {
            files: StaticFiles::new(&root),
            root,
            pool: Arc::new(Pool::new(spec)),
            next: None,
            bridge: Bridge::new(Hub::new()).bounded_by(spec),
        }))
    }

    /// Hands what is not a page to `next` (static files, CGI scripts).
    #[must_use]
    pub fn or_else<T>(self, next: impl Handler<T>) -> Self {
        let next: Next = Arc::new(move |req| next.call(req));
        let mut pages = Arc::unwrap_or_clone(self.0);
        pages.next = Some(next);
        Self(Arc::new(pages))
    }

    /// Gives pages `bridge`'s hub for `proscenium.publish` and its values for
    /// `proscenium.state` (those of the server's Lua app).
    #[must_use]
    pub fn with_bridge(self, bridge: &Bridge) -> Self {
        let mut pages = Arc::unwrap_or_clone(self.0);
        pages.bridge = bridge.clone();
        pages.pool.renew();
        Self(Arc::new(pages))
    }

    /// The page `path` names, relative to the root: a `.lua` file below it.
    fn page(&self, path: &str) -> Option<PathBuf> {
        let decoded = percent_encoding::percent_decode_str(path)
            .decode_utf8()
            .ok()?;
        if !decoded.ends_with(".lua") || decoded.contains('\0') || decoded.contains('\\') {
            return None;
        }
        let mut relative = PathBuf::new();
        for segment in decoded.split('/').filter(|s| !s.is_empty() && *s != ".") {
            if segment.starts_with('.') {
                return None;
            }
            relative.push(segment);
        }
        let meta = self.0.files.metadata_beneath(&relative).ok()?;
        meta.is_file().then_some(relative)
    }

    /// Answers `req` with the page in `relative`, on a script thread.
    fn serve(&self, req: Request, relative: PathBuf) -> Reply {
        let pages = self.clone();
        self.0
            .pool
            .on_thread(move |turn| Ran::Answer(pages.run(turn, &req, &relative)))
    }

    /// Answers `req` with the page in `relative` on this script thread: compiled on the
    /// state the request takes unless it was, and fresh, then run holding the values it
    /// declared.
    fn run(&self, turn: &Turn<'_>, req: &Request, relative: &Path) -> Response {
        let pages = &*self.0;
        let name = format!("/{}", relative.display());
        let file = pages.root.join(relative);
        let made = pages.pool.take(|instructions| {
            sandbox::state(&pages.root, &pages.bridge, instructions)
                .map(|state| (state, Compiled::new()))
        });
        let mut slot = match made {
            Ok(slot) => slot,
            Err(failure) => return failure.answer(&name),
        };
        let page = pages.pool.budgeted(&mut slot, |state, compiled| {
            if let Some(page) = compiled.get_mut(&file) {
                if !stamp::due(&mut page.checked) || stamp::take(&file) == page.stamp {
                    return Ok(page.clone());
                }
            }
            let page = compile(&state.lua, &file, relative, &pages.bridge)?;
            compiled.insert(file.clone(), page.clone());
            Ok(page)
        });
        match page {
            Ok(page) => convert::respond(
                turn,
                &pages.pool,
                slot,
                (&page.handle, page.locks.as_ref()),
                req,
                &name,
            ),
            Err(failure) => {
                let answer = failure.answer(&name);
                pages.pool.settle(slot, &Err::<(), _>(failure));
                answer
            }
        }
    }
}

/// Runs the page in `file` in an environment of its own: its `handle`, and the locks
/// its `page.state` declares, on `bridge`.
fn compile(lua: &Lua, file: &Path, relative: &Path, bridge: &Bridge) -> mlua::Result<Page> {
    let stamp = stamp::take(file);
    let text = std::fs::read(file).map_err(mlua::Error::external)?;
    let env = readonly::page_env(lua)?;
    lua.load(text)
        .set_mode(ChunkMode::Text)
        .set_name(format!("@{}", relative.display()))
        .set_environment(env.clone())
        .exec()?;
    let shown = relative.display();
    let handle = env
        .raw_get::<Option<Function>>("handle")?
        .ok_or_else(|| mlua::Error::runtime(format!("{shown}: defines no handle(request)")))?;
    let declared = match env.raw_get::<Value>("page")? {
        Value::Nil => None,
        Value::Table(page) => bridge::declared(Some(&page), &shown.to_string())?,
        _ => {
            return Err(mlua::Error::runtime(format!(
                "{shown}: page must be a table, such as {{ state = \"read\" }}"
            )));
        }
    };
    let route = format!("/{shown}");
    Ok(Page {
        handle,
        locks: declared.map(|access| bridge.locks(access, &route)),
        stamp,
        checked: Instant::now(),
    })
}

impl Handler<LuaPages> for LuaPages {
    fn call(&self, req: Request) -> Reply {
        let Some(relative) = self.page(req.uri().path()) else {
            return match &self.0.next {
                Some(next) => next(req),
                None => Reply::ready(crate::app::error(
                    http::StatusCode::NOT_FOUND,
                    "no such page",
                )),
            };
        };
        self.serve(req, relative)
    }

    /// Async: its requests are awaited on their own thread, their scripts run on
    /// script threads.
    fn mode(&self) -> Mode {
        Mode::Async
    }
}
