//! Entry points for the fuzz targets in `fuzz/` (`cargo +nightly fuzz run decode`),
//! compiled only with `--cfg fuzzing`, which `cargo fuzz` sets. Each takes arbitrary
//! bytes and panics only when a property fails.

use crate::http::h1::readings::readings;

/// Decodes `data` as a stream of requests, whole and cut into reads where its first
/// bytes say: never a panic, and the same messages (and the same refusal) either way.
pub fn decode(data: &[u8]) {
    let (cuts, stream) = data.split_at(data.len().min(4));
    let cuts: Vec<usize> = cuts.iter().map(|&b| usize::from(b) * 7).collect();
    assert_eq!(readings(stream, &[]), readings(stream, &cuts), "{stream:?}");
}
