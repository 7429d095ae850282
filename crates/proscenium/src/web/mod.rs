//! The web server around the application: static files and directory listings, CGI
//! scripts, and diagnostic routes — each switched on by the [`Config`]. (The access
//! log and error pages are the connection's: `http::access_log`, `http::error_page`.)

pub(crate) mod file_cache;
mod listing;
mod static_files;
mod tools;

pub use self::static_files::StaticFiles;
pub use self::tools::echo;

use crate::cgi::Cgi;
use crate::{App, Config};

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
        app = tools::mount(app);
    }
    if let Some(root) = &config.root {
        let files = StaticFiles::new(root).show_dotfiles(config.show_dotfiles);
        app = if config.cgi.enabled {
            let mut scripts = Cgi::new(root, &config.cgi).or_files(files);
            // Port 0 (any free one) is not known yet: scripts then get the Host's.
            if config.bind.port() != 0 {
                scripts = scripts.port(config.bind.port());
            }
            app.fallback(scripts)
        } else {
            app.fallback(files)
        };
    }
    app
}
