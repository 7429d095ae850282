//! The frames between Proscenium and an interpreter process running a hosted app
//! (`rack.rb`, `wsgi.py`), over the process's standard input and output.
//!
//! A frame is a length, four bytes big-endian, then that many bytes. A request is a
//! frame holding the environment as a JSON object of strings, then the body in frames,
//! then an empty frame. An answer is a frame holding `{"status": N, "headers":
//! [[name, value], ...]}`, then the body in frames, then an empty frame. An adapter
//! writes one empty frame when its app has loaded, before it reads a request.

use bytes::Bytes;
use serde::Deserialize;
use tokio::io::{
    AsyncBufRead as _, AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, BufReader,
};

/// The largest frame read from an interpreter: an answer's head, or one chunk of its
/// body (an app that writes a larger chunk in one piece is cut off, as a broken one).
pub(super) const MAX_FRAME: u32 = 16 << 20;

/// The largest frame of a request body written: the body goes in pieces this size.
const BODY_PIECE: usize = 1 << 20;

/// An answer's head, as the adapter writes it.
#[derive(Debug, Deserialize)]
pub(super) struct Head {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, String)>,
}

/// Writes a request: its environment, then its body, then the empty frame.
pub(super) async fn write_request(
    to: &mut (impl AsyncWrite + Unpin),
    env: &serde_json::Map<String, serde_json::Value>,
    body: &[u8],
) -> std::io::Result<()> {
    let env = serde_json::to_vec(env).map_err(std::io::Error::other)?;
    write_frame(to, &env).await?;
    for piece in body.chunks(BODY_PIECE) {
        write_frame(to, piece).await?;
    }
    write_frame(to, &[]).await?;
    to.flush().await
}

async fn write_frame(to: &mut (impl AsyncWrite + Unpin), bytes: &[u8]) -> std::io::Result<()> {
    let length = u32::try_from(bytes.len()).map_err(std::io::Error::other)?;
    to.write_all(&length.to_be_bytes()).await?;
    to.write_all(bytes).await
}

/// Reads one frame: its bytes (empty for the empty frame).
///
/// # Errors
///
/// The stream ended (the process died), or the frame passes [`MAX_FRAME`].
pub(super) async fn read_frame(from: &mut (impl AsyncRead + Unpin)) -> std::io::Result<Bytes> {
    let length = from.read_u32().await?;
    if length > MAX_FRAME {
        return Err(std::io::Error::other(format!(
            "a frame of {length} bytes, past the {MAX_FRAME} taken"
        )));
    }
    let mut bytes = vec![0; length as usize];
    from.read_exact(&mut bytes).await?;
    Ok(bytes.into())
}

/// Takes the next frame when the whole of it is in `from`'s buffer already — an
/// adapter writes a short answer in one piece — without waiting for more.
pub(super) fn buffered_frame<R: AsyncRead + Unpin>(from: &mut BufReader<R>) -> Option<Bytes> {
    let buffer = from.buffer();
    let length = u32::from_be_bytes(buffer.get(..4)?.try_into().ok()?);
    if length > MAX_FRAME {
        // Left for `read_frame` to refuse.
        return None;
    }
    let end = 4 + length as usize;
    let frame = Bytes::copy_from_slice(buffer.get(4..end)?);
    std::pin::Pin::new(from).consume(end);
    Some(frame)
}

/// Reads an answer's head.
///
/// # Errors
///
/// As [`read_frame`], or a head that is not the JSON the adapters write.
pub(super) async fn read_head(from: &mut (impl AsyncRead + Unpin)) -> std::io::Result<Head> {
    let frame = read_frame(from).await?;
    serde_json::from_slice(&frame).map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_is_its_environment_its_body_in_pieces_and_an_empty_frame() {
        let mut env = serde_json::Map::new();
        env.insert("PATH_INFO".into(), "/a".into());
        let body = vec![7; BODY_PIECE + 3];
        let mut wire = Vec::new();
        write_request(&mut wire, &env, &body).await.unwrap();
        let mut read = wire.as_slice();
        let env_frame = read_frame(&mut read).await.unwrap();
        assert_eq!(&env_frame[..], br#"{"PATH_INFO":"/a"}"#);
        assert_eq!(read_frame(&mut read).await.unwrap().len(), BODY_PIECE);
        assert_eq!(read_frame(&mut read).await.unwrap().len(), 3);
        assert!(read_frame(&mut read).await.unwrap().is_empty());
        assert!(read.is_empty());
    }

    #[tokio::test]
    async fn only_a_frame_whole_in_the_buffer_is_taken_without_waiting() {
        let mut wire = Vec::new();
        write_frame(&mut wire, b"one").await.unwrap();
        write_frame(&mut wire, b"").await.unwrap();
        write_frame(&mut wire, b"cut short").await.unwrap();
        wire.truncate(wire.len() - 2);
        let mut from = BufReader::new(wire.as_slice());
        assert_eq!(buffered_frame(&mut from), None, "nothing read yet");
        assert_eq!(&read_frame(&mut from).await.unwrap()[..], b"one");
        assert_eq!(buffered_frame(&mut from).as_deref(), Some(&b""[..]));
        assert_eq!(
            buffered_frame(&mut from),
            None,
            "the last frame is not whole"
        );
    }

    #[tokio::test]
    async fn a_head_past_the_largest_frame_or_cut_short_is_an_error() {
        let mut past = (MAX_FRAME + 1).to_be_bytes().to_vec();
        past.extend_from_slice(b"{}");
        assert!(read_frame(&mut past.as_slice()).await.is_err());
        let cut = [0, 0, 0, 9, b'{'];
        assert!(read_head(&mut cut.as_slice()).await.is_err());
        let mut whole = 40u32.to_be_bytes().to_vec();
        whole.extend_from_slice(br#"{"status":201,"headers":[["a","b"]]}    "#);
        let head = read_head(&mut whole.as_slice()).await.unwrap();
        assert_eq!(
            (head.status, head.headers),
            (201, vec![("a".into(), "b".into())])
        );
    }
}
