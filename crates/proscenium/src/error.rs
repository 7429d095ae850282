//! The crate's error type: what can go wrong starting or running a server.

/// An error starting or running a server.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action}: {source}")]
pub struct Error {
    action: String,
    #[source]
    source: std::io::Error,
}

impl Error {
    pub(crate) fn io(action: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let action = action.into();
        move |source| Self { action, source }
    }

    /// An app the server cannot run as configured: `why` names the route at fault.
    pub(crate) fn app(why: String) -> Self {
        Self::io("serve the app")(std::io::Error::new(std::io::ErrorKind::InvalidInput, why))
    }

    /// Returns whether the address to listen on was in use.
    pub fn is_addr_in_use(&self) -> bool {
        self.source.kind() == std::io::ErrorKind::AddrInUse
    }
}
