//! An HTTP/2 client for tests: the `h2` crate's, over cleartext (prior knowledge) or
//! TLS (ALPN `h2`), driven by a runtime of its own so tests stay synchronous.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use http::{HeaderMap, Request, StatusCode};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

/// How long an answer may take on a busy machine.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// An HTTP/2 connection.
pub struct H2 {
    runtime: Runtime,
    send: SendRequest<Bytes>,
}

/// An answer, read whole.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

impl H2 {
    /// Connects in cleartext, with prior knowledge.
    pub fn connect(addr: SocketAddr) -> Self {
        let runtime = runtime();
        let send = runtime.block_on(async {
            let tcp = TcpStream::connect(addr).await.expect("connect");
            handshake(tcp).await
        });
        Self { runtime, send }
    }

    /// Connects over TLS with `config` (which must offer `h2`), asking for `name`.
    pub fn connect_tls(addr: SocketAddr, name: &str, config: Arc<rustls::ClientConfig>) -> Self {
        let runtime = runtime();
        let name = rustls::pki_types::ServerName::try_from(name.to_owned()).expect("a name");
        let send = runtime.block_on(async {
            let tcp = TcpStream::connect(addr).await.expect("connect");
            let tls = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .expect("a TLS handshake");
            assert_eq!(
                tls.get_ref().1.alpn_protocol(),
                Some(&b"h2"[..]),
                "ALPN agreed on h2"
            );
            handshake(tls).await
        });
        Self { runtime, send }
    }

    /// Sends a request with `body` and reads its answer whole.
    pub fn send(&mut self, req: Request<()>, body: Bytes) -> Answer {
        let send = self.send.clone();
        self.runtime.block_on(exchange(send, req, body))
    }

    /// Sends a GET for `path`.
    pub fn get(&mut self, path: &str) -> Answer {
        self.send(request("GET", path), Bytes::new())
    }

    /// Sends every request at once on the connection and returns the answers in order.
    pub fn all_at_once(&mut self, reqs: Vec<(Request<()>, Bytes)>) -> Vec<Answer> {
        let send = self.send.clone();
        self.runtime.block_on(async move {
            let exchanges = reqs
                .into_iter()
                .map(|(req, body)| tokio::spawn(exchange(send.clone(), req, body)));
            let mut answers = Vec::new();
            for exchange in exchanges.collect::<Vec<_>>() {
                answers.push(exchange.await.expect("an exchange"));
            }
            answers
        })
    }

    /// Runs `f` on the client's runtime (for what the helpers above do not cover).
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.runtime.block_on(f)
    }

    /// The handle to send requests with, for [`block_on`](Self::block_on).
    pub fn sender(&self) -> SendRequest<Bytes> {
        self.send.clone()
    }
}

/// A request for `path` on `http://t`.
pub fn request(method: &str, path: &str) -> Request<()> {
    Request::builder()
        .method(method)
        .uri(format!("http://t{path}"))
        .body(())
        .expect("a request")
}

async fn handshake<T>(io: T) -> SendRequest<Bytes>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (send, conn) = h2::client::handshake(io)
        .await
        .expect("an HTTP/2 handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    send
}

/// Sends `req` and reads its answer whole, within [`ANSWER_WITHIN`].
pub async fn exchange(send: SendRequest<Bytes>, req: Request<()>, body: Bytes) -> Answer {
    tokio::time::timeout(ANSWER_WITHIN, async move {
        let mut send = send.ready().await.expect("the connection takes a stream");
        let (answer, mut stream) = send.send_request(req, body.is_empty()).expect("a stream");
        if !body.is_empty() {
            send_body(&mut stream, body).await;
        }
        let answer = answer.await.expect("an answer");
        let (parts, mut recv) = answer.into_parts();
        let mut body = Vec::new();
        while let Some(chunk) = recv.data().await {
            let chunk = chunk.expect("the body");
            let _ = recv.flow_control().release_capacity(chunk.len());
            body.extend_from_slice(&chunk);
        }
        Answer {
            status: parts.status,
            headers: parts.headers,
            body: body.into(),
        }
    })
    .await
    .expect("an answer within 60 s")
}

/// Sends `body` as the server's window lets it, ending the stream.
pub async fn send_body(stream: &mut h2::SendStream<Bytes>, mut body: Bytes) {
    while !body.is_empty() {
        stream.reserve_capacity(body.len());
        let room = std::future::poll_fn(|cx| stream.poll_capacity(cx))
            .await
            .expect("a window")
            .expect("the stream open");
        let piece = body.split_to(room.min(body.len()));
        stream
            .send_data(piece, body.is_empty())
            .expect("the stream takes data");
    }
}
