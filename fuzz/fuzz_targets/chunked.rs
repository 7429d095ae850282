//! The chunked body decoder alone: never a panic, one body however it is cut into
//! reads, within its limit, and the same body again through the server's chunk encoder
//! (`proscenium::fuzz::chunked`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| proscenium::fuzz::chunked(data));
