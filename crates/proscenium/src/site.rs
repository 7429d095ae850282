//! The composition root of the web server: the app a [`Server`](crate::Server) runs is
//! the app's own routes, and below them what the [`Config`] switches on — diagnostic
//! tools, a Lua app, Lua pages, CGI scripts, static files — each handing on what is
//! not its own to the next.

use std::sync::Arc;

use crate::app::{Handler, Mode, Reply};
use crate::cgi::Cgi;
use crate::http::Request;
use crate::hub::Hub;
use crate::lua::{Bridge, LuaApp, LuaAppError, LuaPages};
use crate::web::{StaticFiles, mount_tools};
use crate::{App, Config};

/// Returns `app` with what `config` asks for: diagnostic tools, and below the app's
/// routes a Lua app's (`[lua] app`), then what `root` holds — Lua pages (`[lua]
/// enabled`), CGI scripts (`[cgi] enabled`), static files. [`Server`](crate::Server)
/// calls it when it starts.
///
/// # Errors
///
/// The Lua app named does not load (its error says the file and line).
///
/// # Examples
///
/// ```
/// let config = proscenium::Config { tools: true, ..Default::default() };
/// let app = proscenium::site::configure(proscenium::App::new(), &config).unwrap();
/// assert!(app.routes().any(|r| r.pattern == "/_status"));
/// ```
pub fn configure(mut app: App, config: &Config) -> Result<App, LuaAppError> {
    if config.tools {
        app = mount_tools(app);
    }
    // Lua's posts and feeds — through Redis with the other replicas when `[feeds]`
    // names one (made only when Lua runs: a Redis hub keeps a connection) — and its
    // shared values, one set for the app and the pages.
    let lua = config.lua.enabled || config.lua.app.is_some();
    let bridge = lua.then(|| Bridge::new(Hub::with(config.feeds.clone())).bounded_by(&config.lua));
    let mut below: Option<Chain> = config.root.as_ref().map(|root| {
        // The configuration, where passwords go, is never served (issue 33).
        let mut files = StaticFiles::new(root)
            .show_dotfiles(config.show_dotfiles)
            .precompressed(config.compression.precompressed)
            .withhold(root.join("proscenium.toml"));
        if let Some(file) = &config.file {
            files = files.withhold(file);
        }
        let mut site = if config.cgi.enabled {
            let mut scripts = Cgi::new(root, &config.cgi).or_files(files);
            // Port 0 (any free one) is not known yet: scripts then get the Host's.
            if config.bind.port() != 0 {
                scripts = scripts.port(config.bind.port());
            }
            Chain::of(scripts)
        } else {
            Chain::of(files)
        };
        if let (true, Some(bridge)) = (config.lua.enabled, &bridge) {
            let pages = LuaPages::new(root, &config.lua).with_bridge(bridge);
            site = Chain::of(pages.or_else(site));
        }
        site
    });
    if let (Some(file), Some(bridge)) = (&config.lua.app, &bridge) {
        let lua = LuaApp::load_with(file, &config.lua, bridge)?;
        below = Some(Chain::of(match below {
            Some(site) => lua.or_else(site),
            None => lua,
        }));
    }
    if let Some(below) = below {
        app = app.fallback(below);
    }
    Ok(app)
}

/// One of the handlers below the app's routes, whichever `configure` put first: each
/// hands on what is not its own to the next.
#[derive(Clone)]
struct Chain {
    call: Arc<dyn Fn(Request) -> Reply + Send + Sync>,
    mode: Mode,
}

impl Chain {
    fn of<T>(handler: impl Handler<T>) -> Self {
        Self {
            mode: handler.mode(),
            call: Arc::new(move |req| handler.call(req)),
        }
    }
}

impl Handler<Chain> for Chain {
    fn call(&self, req: Request) -> Reply {
        (self.call)(req)
    }

    fn mode(&self) -> Mode {
        self.mode
    }
}
