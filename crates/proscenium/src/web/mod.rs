//! The web server around the application: static files and directory listings, error
//! pages, and diagnostic routes — each switched on by the [`Config`]. (The access log
//! is the connection's: `http::access_log`.)

pub(crate) mod error_page;
mod listing;
mod static_files;
mod tools;

use std::sync::{Arc, OnceLock};

pub use self::static_files::StaticFiles;
pub use self::tools::echo;

use crate::rt::watchdog::LoopStats;
use crate::{App, Config};

/// The loops' counters, filled in once the loops have started (an [`App`] carries a
/// handle to them, so its `/_status` route can read them).
#[derive(Debug, Clone, Default)]
pub(crate) struct LiveStats(Arc<OnceLock<Vec<Arc<LoopStats>>>>);

impl LiveStats {
    pub(crate) fn set(&self, stats: Vec<Arc<LoopStats>>) {
        let _ = self.0.set(stats);
    }

    fn get(&self) -> &[Arc<LoopStats>] {
        self.0.get().map_or(&[], Vec::as_slice)
    }
}

/// Returns `app` with what `config` asks for: diagnostic tools and static files from
/// `root`. [`Server`](crate::Server) calls it when it starts.
///
/// # Examples
///
/// ```
/// let config = proscenium::Config { tools: true, ..Default::default() };
/// let app = proscenium::web::configure(proscenium::App::new(), &config);
/// assert!(app.routes().any(|r| r.pattern == "/_status"));
/// ```
pub fn configure(mut app: App, config: &Config) -> App {
    if config.tools {
        let live = app.live.clone();
        app = tools::mount(app, &live);
    }
    if let Some(root) = &config.root {
        app = app.fallback(StaticFiles::new(root).show_dotfiles(config.show_dotfiles));
    }
    app
}

/// Escapes text for HTML element content and attribute values.
pub(crate) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
