//! HTTP/1.1 in the manner of hyper's `proto/h1`: `head` and `chunked` parse, `decode`
//! assembles messages, `encode` writes responses — all free of socket I/O and
//! unit-tested on byte slices (bodies waiting for more bytes gather in `http::intake`)
//! — while `conn` drives a connection with them (its socket through `io`, its waits
//! between requests by the `idle` policy; the app is called through `http::invoke`),
//! `answer` encodes and logs every answer, `ready` tells a thread model's waiting room
//! when a connection has a request worth a thread, and `service` is what the runtime
//! is handed to serve connections with.

mod answer;
mod chunked;
mod conn;
mod decode;
mod encode;
mod error;
mod head;
mod idle;
mod io;
mod ready;
mod service;
mod upgraded;

#[cfg(test)]
mod proptests;
#[cfg(any(test, fuzzing))]
pub(crate) mod readings;

// The parsers and the chunk encoder the fuzz targets drive alone (`crate::fuzz`).
#[cfg(fuzzing)]
pub(crate) use self::{
    chunked::ChunkedDecoder,
    encode::{chunk, last_chunk},
    error::ParseError,
    head::{Head, parse as parse_head},
};

pub(crate) use self::service::{Http1, Http1Loop};
