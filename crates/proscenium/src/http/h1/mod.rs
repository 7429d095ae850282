//! HTTP/1.1 in the manner of hyper's `proto/h1`: `head` and `chunked` parse, `decode`
//! assembles messages, `encode` writes responses — all free of I/O and unit-tested on
//! byte slices — while `conn` drives a socket with them and `dispatch` hands requests to
//! the application.

mod chunked;
pub(crate) mod conn;
mod decode;
mod dispatch;
mod encode;
mod error;
mod head;

#[cfg(test)]
mod proptests;
