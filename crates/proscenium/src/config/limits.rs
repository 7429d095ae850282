//! What one request and one connection may take: sizes and counts ([`Limits`]) and
//! durations ([`Timeouts`]); each past its bound gets a defined answer
//! (docs/security.md).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::value;

/// Limits on what one request may contain; past each the client gets its status.
/// Sizes are bytes, or text (`"8MiB"`, `"64KiB"`, `"1GB"`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Bytes of request line plus header section (431 past it).
    #[serde(
        deserialize_with = "value::bytes::within::<_, usize, 256, 1_048_576>",
        serialize_with = "value::bytes::serialize"
    )]
    pub max_head: usize,
    /// Header fields in one request (431 past it).
    #[serde(deserialize_with = "value::count::<_, 1, 10_000>")]
    pub max_headers: usize,
    /// Bytes of the request target (414 past it).
    #[serde(
        deserialize_with = "value::bytes::within::<_, usize, 16, 1_048_576>",
        serialize_with = "value::bytes::serialize"
    )]
    pub max_uri: usize,
    /// Bytes of a request body after de-chunking (413 past it).
    #[serde(
        deserialize_with = "value::bytes::within::<_, u64, 0, { 1 << 40 }>",
        serialize_with = "value::bytes::serialize"
    )]
    pub max_body: u64,
    /// Requests served on one connection before it is closed.
    #[serde(deserialize_with = "value::number::<_, u64, 1, 1_000_000_000_000>")]
    pub max_requests_per_conn: u64,
    /// Live connections (under the thread models: those waiting for a request and
    /// those on a thread); accepting pauses at the cap and resumes below it (the
    /// kernel's backlog holds the rest).
    #[serde(deserialize_with = "value::count::<_, 1, 10_000_000>")]
    pub max_connections: usize,
    /// Bytes per second a request must arrive at, and a response be read at, once it
    /// has taken `timeouts.grace` (as Apache's `mod_reqtimeout` `MinRate`): a request
    /// behind is answered 408, a reader behind is dropped. 0 turns it off.
    #[serde(
        deserialize_with = "value::bytes::within::<_, u64, 0, 1_000_000_000>",
        serialize_with = "value::bytes::serialize"
    )]
    pub min_rate: u64,
    /// Requests one loop handles at once; past it requests get 503 with Retry-After.
    #[serde(deserialize_with = "value::count::<_, 1, 1_000_000>")]
    pub max_inflight: usize,
    /// Bytes the whole server buffers for request bodies that wait for more bytes
    /// (a body that arrives with its head is not counted, nor a spooled one) and for
    /// WebSocket messages being gathered; past it the request that needs more room
    /// gets 503 with Retry-After, the socket 1013 (try again later).
    #[serde(
        deserialize_with = "value::bytes::within::<_, usize, 0, { 1 << 40 }>",
        serialize_with = "value::bytes::serialize"
    )]
    pub max_buffered_bodies: usize,
    /// Bytes past which a body that waits for more bytes is written to an unnamed
    /// temporary file in `spool_dir` as it arrives, instead of memory: a body whose
    /// announced length passes it, or a chunked body once what arrived does. The app
    /// gets it mapped from the file. At `max_body` or more, no body is spooled.
    #[serde(
        deserialize_with = "value::bytes::within::<_, u64, 0, { 1 << 40 }>",
        serialize_with = "value::bytes::serialize"
    )]
    pub spool_above: u64,
    /// Bytes of disk the whole server uses for spooled bodies; past it the request
    /// that needs more gets 503 with Retry-After.
    #[serde(
        deserialize_with = "value::bytes::within::<_, usize, 0, { 1 << 40 }>",
        serialize_with = "value::bytes::serialize"
    )]
    pub max_spooled_bodies: usize,
    /// The directory of spooled bodies (default: the system's temporary directory,
    /// `TMPDIR`; a relative path is taken from the working directory). Unless no body
    /// can be spooled, the server refuses to start if it cannot make a file there.
    pub spool_dir: PathBuf,
    /// Bytes of static files (each up to `static_cache_file`) the `staged` model's
    /// cache stage keeps in memory, least recently used out first; 0 turns the cache
    /// off. The other models read files per request.
    #[serde(
        deserialize_with = "value::bytes::within::<_, u64, 0, { 1 << 40 }>",
        serialize_with = "value::bytes::serialize"
    )]
    pub static_cache: u64,
    /// The largest file the cache stage keeps (64 KiB, the size past which the other
    /// models send a file with sendfile); of a larger one it keeps only that it is
    /// large. Leda's Fig. 9a served 300 KB files from its cache.
    #[serde(
        deserialize_with = "value::bytes::within::<_, u64, 0, { 1 << 30 }>",
        serialize_with = "value::bytes::serialize"
    )]
    pub static_cache_file: u64,
    /// Fields in one `multipart/form-data` body a `Multipart` extractor reads (413 past
    /// it).
    #[serde(deserialize_with = "value::count::<_, 1, 1_000_000>")]
    pub multipart_fields: usize,
    /// Bytes of one field of a `multipart/form-data` body (413 past it).
    #[serde(
        deserialize_with = "value::bytes::within::<_, u64, 0, { 1 << 40 }>",
        serialize_with = "value::bytes::serialize"
    )]
    pub multipart_field: u64,
    /// Bytes of a whole `multipart/form-data` body, boundaries and field heads included
    /// (413 past it); `max_body` bounds every body first.
    #[serde(
        deserialize_with = "value::bytes::within::<_, u64, 0, { 1 << 40 }>",
        serialize_with = "value::bytes::serialize"
    )]
    pub multipart_body: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_head: 16 * 1024,
            max_headers: 100,
            max_uri: 8 * 1024,
            max_body: 8 * 1024 * 1024,
            max_requests_per_conn: 100_000,
            max_connections: 10_000,
            min_rate: 500,
            max_inflight: 1024,
            max_buffered_bodies: 256 * 1024 * 1024,
            spool_above: 1024 * 1024,
            max_spooled_bodies: 1024 * 1024 * 1024,
            spool_dir: std::env::temp_dir(),
            static_cache: 64 * 1024 * 1024,
            // What the other models read into memory rather than send with sendfile.
            static_cache_file: 64 * 1024,
            multipart_fields: 100,
            multipart_field: 8 * 1024 * 1024,
            multipart_body: 1 << 30,
        }
    }
}

/// Connection timeouts, in the config as seconds (fractions allowed) or as text
/// (`"10s"`, `"250ms"`): each from 1 ms to a day, `grace` and `shutdown` from 0 (said
/// below what 0 does).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Timeouts {
    /// From the first byte of a request until its header section is complete (408
    /// after); a new connection that sends nothing is closed after it too.
    #[serde(
        deserialize_with = "value::seconds::within::<_, 1, { value::DAY }>",
        serialize_with = "value::seconds::serialize"
    )]
    pub header: Duration,
    /// Between two reads of a request body (408 after), and between two writes that
    /// make progress on a response (the connection is dropped after).
    #[serde(
        deserialize_with = "value::seconds::within::<_, 1, { value::DAY }>",
        serialize_with = "value::seconds::serialize"
    )]
    pub body: Duration,
    /// How long a request, or the writing of a response, may take before
    /// `limits.min_rate` applies: the time allowed for moving N bytes is this plus N /
    /// `min_rate` seconds. 0 gives none: the rate applies from the first byte.
    #[serde(
        deserialize_with = "value::seconds::within::<_, 0, { value::DAY }>",
        serialize_with = "value::seconds::serialize"
    )]
    pub grace: Duration,
    /// A keep-alive connection with no request is closed after this.
    #[serde(
        deserialize_with = "value::seconds::within::<_, 1, { value::DAY }>",
        serialize_with = "value::seconds::serialize"
    )]
    pub idle: Duration,
    /// Under the thread models, how long an accepted connection may wait for a thread
    /// (503 after).
    #[serde(
        deserialize_with = "value::seconds::within::<_, 1, { value::DAY }>",
        serialize_with = "value::seconds::serialize"
    )]
    pub queue: Duration,
    /// How long graceful shutdown waits for in-flight requests. 0 waits for none:
    /// connections are closed as soon as shutdown begins.
    #[serde(
        deserialize_with = "value::seconds::within::<_, 0, { value::DAY }>",
        serialize_with = "value::seconds::serialize"
    )]
    pub shutdown: Duration,
    /// A loop busy in one handler longer than this is reported by the watchdog.
    #[serde(
        deserialize_with = "value::seconds::within::<_, 1, { value::DAY }>",
        serialize_with = "value::seconds::serialize"
    )]
    pub stall: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            header: Duration::from_secs(10),
            body: Duration::from_secs(30),
            grace: Duration::from_secs(5),
            idle: Duration::from_secs(60),
            queue: Duration::from_secs(5),
            shutdown: Duration::from_secs(10),
            stall: Duration::from_millis(100),
        }
    }
}
