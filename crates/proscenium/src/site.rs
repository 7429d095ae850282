//! The composition root of the web server: the app a [`Server`](crate::Server) runs is
//! the app's own routes, and below them what the [`Config`] switches on — diagnostic
//! tools, a Lua app, Lua pages, CGI scripts, static files — each handing on what is
//! not its own to the next.

use std::path::Path;
use std::sync::Arc;

use crate::app::{Handler, Mode, Reply};
#[cfg(feature = "cgi")]
use crate::cgi::Cgi;
#[cfg(feature = "hosted")]
use crate::hosted::{Hosted, HostedError};
use crate::http::Request;
#[cfg(feature = "lua")]
use crate::hub::Hub;
#[cfg(feature = "lua")]
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
/// The configuration asks for what this build leaves out (a cargo feature), or the
/// Lua app named does not load (its error says the file and line).
///
/// # Examples
///
/// ```
/// let config = proscenium::Config { tools: true, ..Default::default() };
/// let app = proscenium::site::configure(proscenium::App::new(), &config).unwrap();
/// assert!(app.routes().any(|r| r.pattern == "/_status"));
/// ```
pub fn configure(mut app: App, config: &Config) -> Result<App, SiteError> {
    refuse_what_is_left_out(config)?;
    if config.tools {
        app = mount_tools(app);
    }
    // Lua's posts and feeds — through Redis with the other replicas when `[feeds]`
    // names one (made only when Lua runs: a Redis hub keeps a connection) — and its
    // shared values, one set for the app and the pages.
    #[cfg(feature = "lua")]
    let bridge = (config.lua.enabled || config.lua.app.is_some())
        .then(|| Bridge::new(Hub::with(config.feeds.clone())).bounded_by(&config.lua));
    let below = config.root.as_ref().map(|root| {
        let site = scripts_or_files(root, config);
        #[cfg(feature = "lua")]
        let site = match (config.lua.enabled, &bridge) {
            (true, Some(bridge)) => Chain::of(
                LuaPages::new(root, &config.lua)
                    .with_bridge(bridge)
                    .or_else(site),
            ),
            _ => site,
        };
        site
    });
    #[cfg(feature = "hosted")]
    let below = hosted(config)?.or(below);
    #[cfg(feature = "lua")]
    let below = match (&config.lua.app, &bridge) {
        (Some(file), Some(bridge)) => {
            let lua = LuaApp::load_with(file, &config.lua, bridge)?;
            Some(Chain::of(match below {
                Some(site) => lua.or_else(site),
                None => lua,
            }))
        }
        _ => below,
    };
    if let Some(below) = below {
        app = app.fallback(below);
    }
    Ok(app)
}

/// Why [`configure`] refused a configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SiteError {
    /// The configuration asks for what this build of Proscenium leaves out.
    #[error(
        "{asked} asks for what this build leaves out: build proscenium with its `{feature}` feature"
    )]
    LeftOut {
        /// The setting that asks, such as `[lua] app`.
        asked: &'static str,
        /// The cargo feature that builds it in.
        feature: &'static str,
    },
    /// The Lua app named does not load.
    #[cfg(feature = "lua")]
    #[error(transparent)]
    Lua(#[from] LuaAppError),
    /// The hosted app named does not start.
    #[cfg(feature = "hosted")]
    #[error(transparent)]
    Hosted(#[from] HostedError),
}

/// Returns [`SiteError::LeftOut`] from the function it is in when `$asked` holds and
/// the build lacks `$feature`.
macro_rules! refuse_unless_built {
    ($feature:literal, $asked:expr, $setting:literal) => {
        if $asked && !cfg!(feature = $feature) {
            return Err(SiteError::LeftOut {
                asked: $setting,
                feature: $feature,
            });
        }
    };
}

/// Refuses a setting whose feature this build leaves out, rather than serve without
/// what the configuration asked for.
fn refuse_what_is_left_out(config: &Config) -> Result<(), SiteError> {
    refuse_unless_built!("metrics", config.admin.bind.is_some(), "`[admin] bind`");
    refuse_unless_built!("cgi", config.cgi.enabled, "`[cgi] enabled`");
    refuse_unless_built!("hosted", config.hosted.names_an_app(), "`[hosted]`");
    refuse_unless_built!(
        "compression",
        config.compression.enabled,
        "`[compression] enabled`"
    );
    refuse_unless_built!("http2", config.http2.enabled, "`[http2] enabled`");
    refuse_unless_built!("lua", config.lua.enabled, "`[lua] enabled`");
    refuse_unless_built!("lua", config.lua.app.is_some(), "`[lua] app`");
    refuse_unless_built!("tls", config.tls.enabled(), "`[tls]`");
    Ok(())
}

/// The hosted app `[hosted]` names, with `root`'s files served before it — unless this
/// process is a supervisor of workers, which serves no request (each worker starts
/// interpreters of its own).
#[cfg(feature = "hosted")]
fn hosted(config: &Config) -> Result<Option<Chain>, HostedError> {
    if config.supervised() && crate::rt::prefork_worker().is_none() {
        return Ok(None);
    }
    let files = config.root.as_ref().map(|root| site_files(root, config));
    Ok(Hosted::start(config, files)?.map(Chain::of))
}

/// What `root` serves below Lua: its CGI scripts (`[cgi] enabled`) before its files,
/// or its files.
fn scripts_or_files(root: &Path, config: &Config) -> Chain {
    let files = site_files(root, config);
    #[cfg(feature = "cgi")]
    if config.cgi.enabled {
        let scripts = Cgi::new(root, &config.cgi).or_files(files);
        // Port 0 (any free one) is not known yet: scripts then get the Host's.
        return Chain::of(match config.bind.port() {
            0 => scripts,
            port => scripts.port(port),
        });
    }
    Chain::of(files)
}

/// `root`'s static files as the configuration sets them.
fn site_files(root: &Path, config: &Config) -> StaticFiles {
    // The configuration, where passwords go, is never served (issue 33).
    let files = StaticFiles::new(root)
        .show_dotfiles(config.show_dotfiles)
        .precompressed(config.compression.precompressed)
        .withhold(root.join("proscenium.toml"));
    match &config.file {
        Some(file) => files.withhold(file),
        None => files,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_this_build_leaves_out_is_refused_by_name() {
        let mut cgi = Config::default();
        cgi.cgi.enabled = true;
        let mut admin = Config::default();
        admin.admin.bind = Some("127.0.0.1:0".parse().unwrap());
        let cases = [
            (cgi, "cgi", "`[cgi] enabled`", cfg!(feature = "cgi")),
            (
                admin,
                "metrics",
                "`[admin] bind`",
                cfg!(feature = "metrics"),
            ),
        ];
        for (config, feature, setting, built) in cases {
            let refused = configure(App::new(), &config).err();
            assert_eq!(refused.is_some(), !built, "{setting}: {refused:?}");
            if let Some(e) = refused {
                assert!(
                    matches!(e, SiteError::LeftOut { feature: f, .. } if f == feature),
                    "{e}"
                );
                assert!(e.to_string().contains(setting), "{e}");
            }
        }
    }
}
