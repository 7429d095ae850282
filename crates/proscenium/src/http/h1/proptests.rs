//! Property tests of the request decoder: it never panics, and it never reads one
//! byte stream as two different sequences of messages, however the stream is split
//! into reads.

use proptest::prelude::*;

use super::readings::readings;

fn request() -> impl Strategy<Value = Vec<u8>> {
    let method = prop::sample::select(vec!["GET", "POST", "PUT", "HEAD"]);
    let body = prop::collection::vec(any::<u8>(), 0..64);
    let framing = 0..4u8;
    (method, "[a-z/]{1,12}", body, framing).prop_map(|(method, path, body, framing)| {
        let mut out = format!("{method} /{path} HTTP/1.1\r\nHost: h\r\n").into_bytes();
        match framing {
            0 => {
                out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            }
            1 => {
                out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                for chunk in body.chunks(7) {
                    out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                    out.extend_from_slice(chunk);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n\r\n");
                return out;
            }
            2 => out.extend_from_slice(b"\r\n"),
            _ => out.extend_from_slice(
                format!(
                    "Content-Length: {}\r\nTransfer-Encoding: chunked\r\n\r\n",
                    body.len()
                )
                .as_bytes(),
            ),
        }
        if framing == 0 {
            out.extend_from_slice(&body);
        }
        out
    })
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(stream in prop::collection::vec(any::<u8>(), 0..512), cuts in prop::collection::vec(any::<usize>(), 0..8)) {
        let _ = readings(&stream, &cuts);
    }

    #[test]
    fn one_stream_has_one_reading_however_it_is_split(
        requests in prop::collection::vec(request(), 1..5),
        noise in prop::collection::vec(any::<u8>(), 0..16),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut stream: Vec<u8> = requests.concat();
        stream.extend_from_slice(&noise);
        let whole = readings(&stream, &[]);
        let split = readings(&stream, &cuts);
        prop_assert_eq!(whole, split);
    }

    #[test]
    fn mutated_requests_never_panic(request in request(), flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6)) {
        let mut stream = request;
        for (at, byte) in flips {
            let at = at % stream.len();
            stream[at] = byte;
        }
        let _ = readings(&stream, &[3, 17, 40]);
    }
}

/// Hand-picked requests, valid and hostile, every one read at every split point.
const SEED_CORPUS: &[&[u8]] = &[
    b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
    b"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: a\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
    b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
    b"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"GET http://h/p HTTP/1.1\r\nHost: h\r\n\r\nOPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
    // Found by `scripts/fuzz` (decode): 505 read whole, 400 read in pieces.
    b"POST / HTTP/Transfer-Encodi\x03\x0b\x14)POST / HTTP/0.1\r\nHong: chust: a\r\nConn",
    b"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
    b"GET / HTTP/1.1x\r\nHost: a\r\n\r\n",
];

#[test]
fn the_seed_corpus_reads_the_same_at_every_split() {
    for seed in SEED_CORPUS {
        let whole = readings(seed, &[]);
        for at in 0..=seed.len() {
            assert_eq!(
                readings(seed, &[at]),
                whole,
                "{:?} split at {at}",
                String::from_utf8_lossy(seed)
            );
        }
    }
}
