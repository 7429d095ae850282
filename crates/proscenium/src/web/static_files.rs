//! Static files (placeholder: being written).

use std::path::{Path, PathBuf};

use crate::app::{Handler, Mode, Reply};
use crate::http::Request;

/// Serves files below a root directory.
#[derive(Debug, Clone)]
pub struct StaticFiles {
    root: PathBuf,
    show_dotfiles: bool,
}

impl StaticFiles {
    /// Returns a handler serving files below `root`.
    pub fn new(root: impl AsRef<Path>) -> Self {
        Self {
            root: root.as_ref().to_owned(),
            show_dotfiles: false,
        }
    }

    /// Serves files and folders whose names start with a dot (hidden by default).
    #[must_use]
    pub fn show_dotfiles(mut self, show: bool) -> Self {
        self.show_dotfiles = show;
        self
    }
}

impl Handler<StaticFiles> for StaticFiles {
    fn call(&self, _req: Request) -> Reply {
        Reply::ready(http::StatusCode::NOT_FOUND)
    }

    fn mode(&self) -> Mode {
        Mode::Inline
    }
}
