//! HTTP/2 frames as raw bytes (RFC 9113 §4.1), for the tests that send what no
//! well-behaved client would.

/// What a client opens with: the preface and an empty SETTINGS frame.
pub fn preface() -> Vec<u8> {
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(frame(SETTINGS, 0, 0, &[]));
    out
}

pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PING: u8 = 6;
pub const CONTINUATION: u8 = 9;

pub const END_STREAM: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;

/// `SETTINGS_INITIAL_WINDOW_SIZE`.
pub const INITIAL_WINDOW_SIZE: u16 = 0x4;

/// One frame: its 9-byte header, then `payload`.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).expect("a frame's length");
    let mut out = len.to_be_bytes()[1..].to_vec();
    out.extend([kind, flags]);
    out.extend(stream.to_be_bytes());
    out.extend(payload);
    out
}

/// A SETTINGS frame of `pairs`.
pub fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
    let payload: Vec<u8> = pairs
        .iter()
        .flat_map(|(id, value)| id.to_be_bytes().into_iter().chain(value.to_be_bytes()))
        .collect();
    frame(SETTINGS, 0, 0, &payload)
}

/// The header block of a request for `/` on `t` with `method` (HPACK: the static
/// table's `:scheme http` and `:path /`, the method and authority as literals).
pub fn request_block(method: &str) -> Vec<u8> {
    let mut block = vec![0x86, 0x84];
    block.extend(literal(2, method.as_bytes()));
    block.extend(literal(1, b"t"));
    block
}

/// A header field without indexing whose name is static table entry `name`.
fn literal(name: u8, value: &[u8]) -> Vec<u8> {
    let mut out = vec![name];
    out.extend(length(value.len()));
    out.extend(value);
    out
}

/// A field with a new `name`, added to the dynamic table (incremental indexing).
pub fn indexed_new(name: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = vec![0x40];
    out.extend(length(name.len()));
    out.extend(name);
    out.extend(length(value.len()));
    out.extend(value);
    out
}

/// A field with a new `name`, not indexed.
pub fn literal_new(name: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = vec![0x00];
    out.extend(length(name.len()));
    out.extend(name);
    out.extend(length(value.len()));
    out.extend(value);
    out
}

/// An HPACK string length (7-bit prefix integer, no Huffman coding).
fn length(n: usize) -> Vec<u8> {
    if n < 127 {
        return vec![u8::try_from(n).expect("under 127")];
    }
    let mut out = vec![127];
    let mut rest = n - 127;
    while rest >= 128 {
        out.push(u8::try_from(rest % 128).expect("under 128") | 0x80);
        rest /= 128;
    }
    out.push(u8::try_from(rest).expect("under 128"));
    out
}
