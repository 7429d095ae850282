//! The HTTP layer: request and body types, the Date cache, and the HTTP/1.1 protocol.

pub(crate) mod body;
pub(crate) mod date;
pub(crate) mod fields;
pub(crate) mod h1;
mod request;
pub(crate) mod spare;

pub use self::body::{Body, BoxError};
pub use self::request::Request;
