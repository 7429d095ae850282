//! The plain-HTTP listener beside the TLS one (`[tls.plain]`): ACME's HTTP-01
//! challenges answered first, then `308 Permanent Redirect` to the same path over
//! HTTPS, or the app.

use std::sync::Arc;

use http::uri::Authority;
use http::{StatusCode, header};

use super::acme::Http01Tokens;
use crate::App;
use crate::http::response::{LocalResponseFuture, Respond};
use crate::http::{Body, Request, Response, Soon};

/// Where ACME's HTTP-01 validator asks for a token's key authorization.
const CHALLENGE_PATH: &str = "/.well-known/acme-challenge/";

/// What a plain listener answers.
#[derive(Debug)]
pub(crate) struct PlainListener {
    /// HTTP-01 answers, when ACME is configured.
    pub(crate) tokens: Option<Http01Tokens>,
    /// The app it serves; `None`: it redirects.
    pub(crate) app: Option<Arc<App>>,
    /// The TLS listener's port, for the redirect.
    pub(crate) https_port: u16,
}

impl Respond for PlainListener {
    fn respond(&self, req: Request) -> Soon<Response, LocalResponseFuture> {
        if let (Some(tokens), Some(token)) =
            (&self.tokens, req.uri().path().strip_prefix(CHALLENGE_PATH))
        {
            return Soon::Ready(match tokens.get(token) {
                Some(authorization) => Response::new(Body::from(authorization)),
                None => status(StatusCode::NOT_FOUND),
            });
        }
        match &self.app {
            Some(app) => app.respond(req),
            None => Soon::Ready(redirect(&req, self.https_port)),
        }
    }

    fn label(&self, id: u32) -> String {
        self.app
            .as_ref()
            .map_or_else(|| "redirect".to_owned(), |app| app.label(id))
    }
}

/// `308` to `https://HOST[:PORT]/path?query`: the host the client asked for, the
/// TLS listener's port (left out when it is 443). A request without a usable host
/// gets 400: a redirect must not name a host the client did not.
fn redirect(req: &Request, https_port: u16) -> Response {
    let asked = req
        .uri()
        .authority()
        .map(Authority::as_str)
        .or_else(|| req.headers().get(header::HOST)?.to_str().ok());
    // A user part (`user@host`) is no host a client asks for.
    let usable = asked.filter(|a| !a.contains('@'));
    let Some(host) = usable.and_then(|a| a.parse::<Authority>().ok()) else {
        return status(StatusCode::BAD_REQUEST);
    };
    let name = host.host();
    let port = match https_port {
        443 => String::new(),
        port => format!(":{port}"),
    };
    let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let location = format!("https://{name}{port}{path}");
    let mut res = status(StatusCode::PERMANENT_REDIRECT);
    match location.parse() {
        Ok(value) => {
            res.headers_mut().insert(header::LOCATION, value);
            res
        }
        Err(_) => status(StatusCode::BAD_REQUEST),
    }
}

fn status(code: StatusCode) -> Response {
    let mut res = Response::new(Body::empty());
    *res.status_mut() = code;
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    fn location(target: &str, host: Option<&str>, port: u16) -> (StatusCode, Option<String>) {
        let mut builder = http::Request::builder().uri(target);
        if let Some(host) = host {
            builder = builder.header(header::HOST, host);
        }
        let req = Request::from(builder.body(crate::Bytes::new()).unwrap());
        let res = redirect(&req, port);
        let location = res
            .headers()
            .get(header::LOCATION)
            .map(|v| v.to_str().unwrap().to_owned());
        (res.status(), location)
    }

    #[test]
    fn redirects_keep_host_path_and_query_and_name_the_tls_port() {
        let (status, to) = location("/a/b?c=1", Some("example.com:80"), 443);
        assert_eq!(status, StatusCode::PERMANENT_REDIRECT);
        assert_eq!(to.as_deref(), Some("https://example.com/a/b?c=1"));
        let (_, to) = location("/", Some("127.0.0.1:8080"), 8443);
        assert_eq!(to.as_deref(), Some("https://127.0.0.1:8443/"));
        let (_, to) = location("/x", Some("[::1]:80"), 443);
        assert_eq!(to.as_deref(), Some("https://[::1]/x"));
    }

    #[test]
    fn a_request_without_a_usable_host_is_refused() {
        assert_eq!(location("/", None, 443).0, StatusCode::BAD_REQUEST);
        assert_eq!(location("/", Some("a b"), 443).0, StatusCode::BAD_REQUEST);
        assert_eq!(
            location("/", Some("x@evil"), 443).0,
            StatusCode::BAD_REQUEST
        );
    }
}
