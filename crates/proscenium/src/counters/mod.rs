//! Process-wide counters the features add to and `admin` encodes for `/metrics`:
//! script runs (`tally`) and Redis round trips (`round_trips`, which `/readyz` reads
//! too). A leaf below every feature that counts, so counting imports nothing above it;
//! the per-thread request tables stay in `http/meter.rs`. Nothing here knows the
//! exposition format: a build without the `metrics` feature counts all the same (the
//! features' calls stay put) and has no reader.

#[cfg(feature = "redis")]
pub(crate) mod round_trips;
#[cfg(any(feature = "metrics", feature = "cgi", feature = "lua"))]
pub(crate) mod tally;

#[cfg(feature = "redis")]
pub(crate) use self::round_trips::{Counted, User};
#[cfg(any(feature = "cgi", feature = "lua"))]
pub(crate) use self::tally::Tally;
