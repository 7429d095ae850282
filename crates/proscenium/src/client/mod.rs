//! An HTTP client for the services an app calls — a push service, a slow backend a
//! handler relays to: hyper's HTTP/1.1 client with pooled keep-alive connections,
//! a deadline on every request, a cap on the connections to each host, and retries
//! for requests safe to repeat.
//!
//! `https://` is spoken with rustls (TLS 1.3 and 1.2), trusting the web's roots
//! (webpki-roots) and those of `[client] ca = "file.pem"` — a private CA's, read
//! when the configuration is, so a missing or unparsable file stops the start. A
//! certificate refused (an unknown issuer, another name, expired) is
//! [`ClientError::Certificate`], never a retry and never a fall back to plain HTTP.
//!
//! Requests run on the client's own runtime, on a thread of its own, so the
//! same client serves handlers on any loop, actors on any dispatcher and stages on
//! any thread — awaited with [`Client::send`], or waited for with
//! [`Client::send_blocking`] where nothing is async. Bodies are whole [`Bytes`] both
//! ways: a request's can be sent again on a retry, and a response's is read to its
//! end under a size bound.
//!
//! With spans exported (`[traces] otlp`), a request carries the caller's W3C
//! `traceparent`: the server called continues the caller's trace.
//!
//! # Example
//!
//! ```no_run
//! # async fn notify() -> Result<(), proscenium::client::ClientError> {
//! use proscenium::client::Client;
//!
//! let client = Client::new();
//! let answer = client.get("http://127.0.0.1:9000/health").await?;
//! assert!(answer.status().is_success());
//! let sent = client
//!     .post_json("http://127.0.0.1:9000/push", &serde_json::json!({"to": "ana", "text": "liked"}))
//!     .await?;
//! println!("push service answered {}", sent.status());
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, Uri, header};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as Pool;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::Semaphore;

pub use crate::config::{CaFile, CaFileError, ClientSpec};
use crate::rt::{Background, Backoff};

mod tls;

/// Why a request got no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The URL is not an absolute `http://` or `https://` URL.
    #[error("not an http:// or https:// URL: {0}")]
    Url(String),
    /// The server's certificate was refused: the request was not sent.
    #[error("the certificate of {host} is refused: {reason}")]
    Certificate {
        /// The host the URL named.
        host: String,
        /// Why it was refused.
        reason: CertificateReason,
    },
    /// No answer within the client's timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The connection or the exchange failed (after any retries).
    #[error("request failed: {0}")]
    Failed(String),
    /// The answer's body is past the client's `max_body`.
    #[error("the answer's body is past {0} bytes")]
    TooLarge(usize),
    /// The body to send does not serialize.
    #[error("the body does not serialize: {0}")]
    Body(#[from] serde_json::Error),
    /// The client's runtime is gone.
    #[error("the client is shut down")]
    Shutdown,
}

/// Why a server's certificate was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CertificateReason {
    /// No trusted root (the web's, or `[client] ca`'s) signed it.
    #[error("its issuer is not trusted")]
    UnknownIssuer,
    /// It is not valid for the host the URL named.
    #[error("it is not valid for this name")]
    NameMismatch,
    /// It has expired.
    #[error("it has expired")]
    Expired,
    /// Another reason, as rustls words it.
    #[error("{0}")]
    Other(String),
}

/// A pooled HTTP/1.1 client (see the [module docs](self)); cloned, it is the same
/// client, its pool and its caps shared.
#[derive(Debug, Clone)]
pub struct Client(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    exchanges: Arc<Exchanges>,
    /// Where requests and their pooled connections run.
    runtime: Background,
}

/// What the client's requests share, on its runtime.
#[derive(Debug)]
struct Exchanges {
    pool: Pool<HttpsConnector<HttpConnector>, Full<Bytes>>,
    spec: ClientSpec,
    /// One permit per connection a host may have.
    hosts: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl Default for Client {
    fn default() -> Self {
        Self::new()
    }
}

impl Client {
    /// A client with the default settings.
    pub fn new() -> Self {
        Self::with(ClientSpec::default())
    }

    /// A client as `spec` says.
    ///
    /// # Panics
    ///
    /// Its thread cannot be started.
    pub fn with(spec: ClientSpec) -> Self {
        let connector = tls::connector(&spec);
        let pool = Pool::builder(TokioExecutor::new())
            .pool_idle_timeout(spec.idle_timeout)
            .pool_max_idle_per_host(spec.max_per_host)
            .pool_timer(TokioTimer::new())
            .build(connector);
        Self(Arc::new(Inner {
            exchanges: Arc::new(Exchanges {
                pool,
                spec,
                hosts: Mutex::new(HashMap::new()),
            }),
            runtime: Background::new("proscenium-client"),
        }))
    }

    /// `GET url`.
    ///
    /// # Errors
    ///
    /// As [`send`](Self::send).
    pub async fn get(&self, url: &str) -> Result<Response<Bytes>, ClientError> {
        self.send(request(Method::GET, url, None, Bytes::new())?)
            .await
    }

    /// `POST url` with `value` as JSON.
    ///
    /// # Errors
    ///
    /// `value` does not serialize, or as [`send`](Self::send).
    pub async fn post_json<T: Serialize>(
        &self,
        url: &str,
        value: &T,
    ) -> Result<Response<Bytes>, ClientError> {
        let body = Bytes::from(serde_json::to_vec(value)?);
        self.send(request(Method::POST, url, Some("application/json"), body)?)
            .await
    }

    /// Sends `request` and reads its answer whole.
    ///
    /// # Errors
    ///
    /// The URL is not an `http://` or `https://` one; no answer within the timeout;
    /// the server's certificate is refused; the connection failed (after the retries
    /// a request safe to repeat gets); the body is past `max_body`.
    pub async fn send(&self, request: Request<Bytes>) -> Result<Response<Bytes>, ClientError> {
        let exchange = self.exchange(request);
        self.0
            .runtime
            .run(exchange)
            .await
            .unwrap_or(Err(ClientError::Shutdown))
    }

    /// Sends `request` and waits for its answer, blocking the thread: for code
    /// that is not async (a stage's handler, a thread of its own). On a loop, await
    /// [`send`](Self::send) instead.
    ///
    /// # Errors
    ///
    /// As [`send`](Self::send).
    pub fn send_blocking(&self, request: Request<Bytes>) -> Result<Response<Bytes>, ClientError> {
        let exchange = self.exchange(request);
        self.0
            .runtime
            .block_on(exchange)
            .unwrap_or(Err(ClientError::Shutdown))
    }

    /// The exchange of `request`, within the timeout, to run on the client's runtime.
    fn exchange(
        &self,
        mut request: Request<Bytes>,
    ) -> impl Future<Output = Result<Response<Bytes>, ClientError>> + Send + 'static {
        // Here, on the caller's thread, where the caller's span is current.
        crate::http::trace::propagate(request.headers_mut());
        let exchanges = Arc::clone(&self.0.exchanges);
        let timeout = exchanges.spec.timeout;
        async move {
            tokio::time::timeout(timeout, exchanges.exchange(request))
                .await
                .unwrap_or(Err(ClientError::Timeout(timeout)))
        }
    }
}

impl Exchanges {
    /// One request, on the client's runtime: a turn at its host, then tries.
    async fn exchange(&self, request: Request<Bytes>) -> Result<Response<Bytes>, ClientError> {
        let host = authority(request.uri())?;
        let turns = Arc::clone(
            self.hosts
                .lock()
                .entry(host)
                .or_insert_with(|| Arc::new(Semaphore::new(self.spec.max_per_host.max(1)))),
        );
        let _turn = turns.acquire().await.map_err(|_| ClientError::Shutdown)?;
        let retries = if is_idempotent(request.method()) {
            self.spec.retries
        } else {
            0
        };
        let (parts, body) = request.into_parts();
        // Uncapped: `retries` bounds the tries.
        let mut backoff = Backoff::new(Duration::from_millis(50), Duration::MAX);
        let mut tried = 0;
        loop {
            let attempt = Request::from_parts(parts.clone(), Full::new(body.clone()));
            let error = match self.pool.request(attempt).await {
                Ok(answer) => return self.read(answer).await,
                Err(error) => error,
            };
            // A refused certificate is refused again: not tried again.
            if let Some(reason) = tls::refused_certificate(&error) {
                let host = parts.uri.host().unwrap_or_default().to_owned();
                return Err(ClientError::Certificate { host, reason });
            }
            if tried == retries {
                return Err(ClientError::Failed(error_chain(&error)));
            }
            tracing::debug!(%error, uri = %parts.uri, "client: trying again");
            tried += 1;
            tokio::time::sleep(backoff.next_delay()).await;
        }
    }

    /// Reads an answer's body whole, up to `max_body`.
    async fn read(
        &self,
        answer: Response<hyper::body::Incoming>,
    ) -> Result<Response<Bytes>, ClientError> {
        let (parts, body) = answer.into_parts();
        let limit = self.spec.max_body;
        let body = Limited::new(body, limit)
            .collect()
            .await
            .map_err(|error| {
                if error.is::<http_body_util::LengthLimitError>() {
                    ClientError::TooLarge(limit)
                } else {
                    ClientError::Failed(error.to_string())
                }
            })?
            .to_bytes();
        Ok(Response::from_parts(parts, body))
    }
}

/// A request for `url` with `body` (of `content_type`).
fn request(
    method: Method,
    url: &str,
    content_type: Option<&'static str>,
    body: Bytes,
) -> Result<Request<Bytes>, ClientError> {
    let uri: Uri = url.parse().map_err(|_| ClientError::Url(url.to_owned()))?;
    let mut builder = Request::builder().method(method).uri(uri);
    if let Some(content_type) = content_type {
        builder = builder.header(header::CONTENT_TYPE, content_type);
    }
    builder
        .body(body)
        .map_err(|_| ClientError::Url(url.to_owned()))
}

/// The scheme, host and port an `http://` or `https://` URL names.
fn authority(uri: &Uri) -> Result<String, ClientError> {
    match (uri.scheme_str(), uri.authority()) {
        (Some(scheme @ ("http" | "https")), Some(authority)) => {
            Ok(format!("{scheme}://{authority}").to_ascii_lowercase())
        }
        _ => Err(ClientError::Url(uri.to_string())),
    }
}

/// Whether a request with `method` may be sent again without changing what it does
/// (RFC 9110 §9.2.2).
fn is_idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::PUT | Method::DELETE | Method::OPTIONS | Method::TRACE
    )
}

/// An error with its causes, for a message that says what failed underneath.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

impl ClientError {
    /// Returns whether the server's certificate was refused.
    pub fn is_certificate(&self) -> bool {
        matches!(self, Self::Certificate { .. })
    }

    /// Returns the status a handler relaying to the service that failed answers
    /// with: 504 when it did not answer in time, 502 otherwise.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            _ => StatusCode::BAD_GATEWAY,
        }
    }
}

#[cfg(test)]
mod tests;
