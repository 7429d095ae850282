//! tower both ways: mounting a `tower::Service` under a path prefix, so an existing
//! axum `Router` (or any tower HTTP service) runs on Proscenium — what Rack is to Ruby
//! servers — and an [`App`](super::App) as a `tower::Service` ([`AppService`]), for
//! hyper or anything else that drives one.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Full, Limited};
use tower::{Service, ServiceExt};

use super::handler::{ErasedHandler, Mode};
use super::response::{Reply, Response, error, unavailable};
use crate::http::{Body, BoxError, Request};

/// A tower service answering every request under `prefix`, which it does not see.
pub(crate) struct Mounted<S> {
    pub(crate) service: S,
    pub(crate) prefix: String,
}

impl<S, B> ErasedHandler for Mounted<S>
where
    S: Service<http::Request<Full<Bytes>>, Response = http::Response<B>>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body + Send + 'static,
    B::Data: Into<Bytes>,
    B::Error: Into<BoxError>,
{
    fn call(&self, req: Request) -> Reply {
        let (mut parts, body) = req.into_parts();
        match strip_prefix(&parts.uri, &self.prefix) {
            Some(uri) => parts.uri = uri,
            None => return Reply::ready(error(StatusCode::BAD_REQUEST, "invalid path")),
        }
        let service = self.service.clone();
        let req = http::Request::from_parts(parts, Full::new(body));
        Reply::later(async move {
            match service.oneshot(req).await {
                Ok(res) => res.map(Body::from_http_body),
                Err(e) => {
                    let e: BoxError = e.into();
                    tracing::error!("mounted service failed: {e}");
                    error(StatusCode::INTERNAL_SERVER_ERROR, "mounted service failed")
                }
            }
        })
    }

    fn mode(&self) -> Mode {
        Mode::Service
    }

    fn state_accesses(&self) -> Vec<crate::shared::StateAccess> {
        Vec::new()
    }
}

impl super::App {
    /// Returns the app as a `tower::Service` of `http` requests, for hyper or any
    /// server that drives tower services.
    ///
    /// The service gathers each request's body (up to 8 MiB, the default
    /// `limits.max_body`, else 413; [`AppService::max_body`] changes it) and answers
    /// with [`Response`]s whose [`Body`] is an `http_body::Body`. Its futures are
    /// local, not `Send`, as an app's replies are: it runs on a current-thread runtime
    /// (inside a `LocalSet` for handlers that spawn), not on a work-stealing one —
    /// so axum, whose services must have `Send` futures, takes
    /// [`App::into_send_service`](super::App::into_send_service) instead.
    /// `blocking` handlers run on a process-wide fallback pool; `blocking_on("NAME")`
    /// ones need the server's named pools and answer 500 here.
    ///
    /// # Examples
    ///
    /// ```
    /// use proscenium::{App, inline};
    /// use tower::ServiceExt;
    ///
    /// let service = App::new().get("/", inline(|| "hi")).into_service();
    /// let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let res = runtime
    ///     .block_on(service.oneshot(http::Request::new(String::new())))
    ///     .unwrap();
    /// assert_eq!(res.status(), 200);
    /// ```
    pub fn into_service(self) -> AppService {
        AppService {
            app: Arc::new(self),
            max_body: crate::config::Limits::default().max_body,
        }
    }
}

/// An [`App`](super::App) as a `tower::Service`, made by
/// [`App::into_service`](super::App::into_service); cloning it shares the app.
#[derive(Clone, Debug)]
pub struct AppService {
    app: Arc<super::App>,
    max_body: u64,
}

impl AppService {
    /// Sets the largest request body the service gathers, in bytes (past it, 413).
    #[must_use]
    pub fn max_body(mut self, bytes: u64) -> Self {
        self.max_body = bytes;
        self
    }
}

impl<B> Service<http::Request<B>> for AppService
where
    B: http_body::Body + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>>>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let app = Arc::clone(&self.app);
        let limit = usize::try_from(self.max_body).unwrap_or(usize::MAX);
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            match gather(body, limit).await {
                Ok(body) => Ok(app.call(Request::new(parts, body, None)).await),
                Err(refused) => Ok(refused),
            }
        })
    }
}

/// Returns `body` whole; past `limit` bytes, 413; a body that fails, 400.
async fn gather<B>(body: B, limit: usize) -> Result<Bytes, Response>
where
    B: http_body::Body,
    B::Error: Into<BoxError>,
{
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            Err(error(StatusCode::PAYLOAD_TOO_LARGE, "body too large"))
        }
        Err(e) => {
            tracing::debug!("request body unreadable: {e}");
            Err(error(StatusCode::BAD_REQUEST, "unreadable body"))
        }
    }
}

/// How many requests wait at most for a [`SendService`]'s thread (past it, 503).
const SEND_SERVICE_QUEUE: usize = 1024;

impl super::App {
    /// Returns the app as a `tower::Service` whose futures are `Send`, for servers and
    /// routers that need them — axum's `Router::nest_service`.
    ///
    /// The app runs on a thread of its own (a current-thread runtime and a
    /// `LocalSet`), as on one of the server's loops; the service gathers each request's
    /// body where it is called (up to 8 MiB, as [`AppService`]), hands the request to
    /// that thread through a queue of 1,024 (full: 503 with `Retry-After`) and awaits
    /// the answer. The thread ends once every clone of the service is dropped.
    ///
    /// # Panics
    ///
    /// When the thread cannot be started.
    pub fn into_send_service(self) -> SendService {
        let (calls, queue) = tokio::sync::mpsc::channel(SEND_SERVICE_QUEUE);
        std::thread::Builder::new()
            .name("proscenium-app".to_owned())
            .spawn(move || run_calls(self, queue))
            .expect("the app service's thread starts");
        SendService {
            calls,
            max_body: crate::config::Limits::default().max_body,
        }
    }
}

/// One request for a [`SendService`]'s thread, and where its answer goes.
struct SentCall {
    parts: http::request::Parts,
    body: Bytes,
    reply: tokio::sync::oneshot::Sender<Response>,
}

/// Answers the calls of `queue` with `app`, each a local task, until the queue closes.
fn run_calls(app: super::App, mut queue: tokio::sync::mpsc::Receiver<SentCall>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            // The queue closes with this thread: every call answers 503.
            tracing::error!("the app service's runtime did not start: {e}");
            return;
        }
    };
    let app = std::rc::Rc::new(app);
    tokio::task::LocalSet::new().block_on(&runtime, async move {
        while let Some(SentCall { parts, body, reply }) = queue.recv().await {
            let app = app.clone();
            tokio::task::spawn_local(async move {
                // A panic drops `reply`: the caller answers 500.
                let _ = reply.send(app.call(Request::new(parts, body, None)).await);
            });
        }
    });
}

/// An [`App`](super::App) as a `tower::Service` with `Send` futures, made by
/// [`App::into_send_service`](super::App::into_send_service).
#[derive(Clone, Debug)]
pub struct SendService {
    calls: tokio::sync::mpsc::Sender<SentCall>,
    max_body: u64,
}

impl SendService {
    /// Sets the largest request body the service gathers, in bytes (past it, 413).
    #[must_use]
    pub fn max_body(mut self, bytes: u64) -> Self {
        self.max_body = bytes;
        self
    }
}

impl<B> Service<http::Request<B>> for SendService
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let calls = self.calls.clone();
        let limit = usize::try_from(self.max_body).unwrap_or(usize::MAX);
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let body = match gather(body, limit).await {
                Ok(body) => body,
                Err(refused) => return Ok(refused),
            };
            let (reply, answer) = tokio::sync::oneshot::channel();
            if calls.try_send(SentCall { parts, body, reply }).is_err() {
                return Ok(unavailable("the app's thread is busy; try again shortly"));
            }
            Ok(answer
                .await
                .unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR, "the handler failed")))
        })
    }
}

/// Returns `uri` with `prefix` removed from its path (`/` when nothing is left).
fn strip_prefix(uri: &http::Uri, prefix: &str) -> Option<http::Uri> {
    let path_and_query = uri.path_and_query().map_or("/", |pq| pq.as_str());
    let rest = path_and_query
        .strip_prefix(prefix.trim_end_matches('/'))
        .unwrap_or(path_and_query);
    let rest = if rest.is_empty() || rest.starts_with('?') {
        format!("/{rest}")
    } else {
        rest.to_owned()
    };
    rest.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_the_mount_prefix() {
        let cases = [
            ("/api/users?x=1", "/api", "/users?x=1"),
            ("/api", "/api", "/"),
            ("/api?x", "/api/", "/?x"),
            ("/users", "/", "/users"),
        ];
        for (uri, prefix, want) in cases {
            assert_eq!(
                strip_prefix(&uri.parse().unwrap(), prefix).unwrap(),
                want,
                "{uri} - {prefix}"
            );
        }
    }
}
