//! The request-head parser alone, fed arbitrary bytes under limits the input chooses:
//! never a panic, limits kept, and a head it takes parses the same written out again
//! (`proscenium::fuzz::head`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| proscenium::fuzz::head(data));
