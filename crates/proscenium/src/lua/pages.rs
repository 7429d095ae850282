//! `.lua` pages below a root: a file defining `handle(request)`, compiled once per
//! state and again when it changes, each page in an environment of its own (its
//! globals are its own; the standard ones are read through).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use mlua::{ChunkMode, Function, Lua};

use super::pool::Pool;
use super::stamp::{self, Stamp};
use super::{Failure, LuaSpec, Next, convert, sandbox};
use crate::app::{Handler, Mode, Reply};
use crate::http::Request;
use crate::hub::Hub;
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
    hub: Option<Hub>,
}

/// The pages a state compiled, by file: each `handle`, the stamp of the file it came
/// from, and when that stamp was last compared with the file's.
type Compiled = HashMap<PathBuf, (Function, Stamp, Instant)>;

impl std::fmt::Debug for LuaPages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LuaPages")
            .field("root", &self.0.root)
            .field("pool", &self.0.pool)
            .finish_non_exhaustive()
    }
}

impl LuaPages {
    /// Returns a handler running the `.lua` files below `root` with `spec`'s budgets.
    pub fn new(root: impl AsRef<Path>, spec: &LuaSpec) -> Self {
        let root = root.as_ref();
        let root = std::path::absolute(root).unwrap_or_else(|_| root.to_owned());
        Self(Arc::new(Pages {
            files: StaticFiles::new(&root),
            root,
            pool: Arc::new(Pool::new(spec)),
            next: None,
            hub: None,
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

    /// Gives pages `proscenium.publish(topic, payload)`, posting to `hub`.
    #[must_use]
    pub fn with_hub(self, hub: Hub) -> Self {
        let mut pages = Arc::unwrap_or_clone(self.0);
        pages.hub = Some(hub);
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

    fn serve(&self, req: &Request, relative: &Path) -> Result<crate::http::Response, Failure> {
        let pages = &*self.0;
        let file = pages.root.join(relative);
        let slot = pages.pool.take(|| {
            sandbox::state(&pages.root, pages.hub.as_ref()).map(|state| (state, Compiled::new()))
        })?;
        let answer = pages.pool.run(slot, |state, compiled| {
            let known = compiled
                .get_mut(&file)
                .and_then(|(handle, known, checked)| {
                    let fresh = !stamp::due(checked) || stamp::take(&file) == *known;
                    fresh.then(|| handle.clone())
                });
            let handle = match known {
                Some(handle) => handle,
                None => {
                    let stamp = stamp::take(&file);
                    let handle = compile(&state.lua, &file, relative)?;
                    compiled.insert(file.clone(), (handle.clone(), stamp, Instant::now()));
                    handle
                }
            };
            convert::call(state, &handle, req)
        })?;
        answer.map_err(|why| Failure::Script(mlua::Error::runtime(why)))
    }
}

/// Runs the page in `file` in an environment of its own, and returns its `handle`.
fn compile(lua: &Lua, file: &Path, relative: &Path) -> mlua::Result<Function> {
    let text = std::fs::read(file).map_err(mlua::Error::external)?;
    let env = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.set("__index", lua.globals())?;
    env.set_metatable(Some(meta))?;
    lua.load(text)
        .set_mode(ChunkMode::Text)
        .set_name(format!("@{}", relative.display()))
        .set_environment(env.clone())
        .exec()?;
    env.raw_get::<Option<Function>>("handle")?.ok_or_else(|| {
        mlua::Error::runtime(format!(
            "{}: defines no handle(request)",
            relative.display()
        ))
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
        let name = format!("/{}", relative.display());
        Reply::ready(
            self.serve(&req, &relative)
                .unwrap_or_else(|failure| failure.answer(&name)),
        )
    }

    fn mode(&self) -> Mode {
        Mode::Inline
    }
}
