//! Mounting a `tower::Service` under a path prefix, so an existing axum `Router` (or any
//! tower HTTP service) runs on Proscenium — what Rack is to Ruby servers.

use bytes::Bytes;
use http::StatusCode;
use http_body_util::Full;
use tower::{Service, ServiceExt};

use super::handler::{ErasedHandler, Mode};
use super::response::{Reply, error};
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
