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
use super::response::{Reply, Response, error};
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

    fn state_accesses(&self) -> Vec<crate::state::StateAccess> {
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
    /// so it cannot be nested in axum, whose services must have `Send` futures.
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
            let body = match Limited::new(body, limit).collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                    return Ok(error(StatusCode::PAYLOAD_TOO_LARGE, "body too large"));
                }
                Err(e) => {
                    tracing::debug!("request body unreadable: {e}");
                    return Ok(error(StatusCode::BAD_REQUEST, "unreadable body"));
                }
            };
            Ok(app.call(Request::new(parts, body, None)).await)
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
