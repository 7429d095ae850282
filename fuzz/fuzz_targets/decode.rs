//! The request decoder fed arbitrary bytes: never a panic, one reading of a stream
//! however it is cut into reads (`proscenium::fuzz::decode`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| proscenium::fuzz::decode(data));
