//! The plain-HTTP listener beside the TLS one (`[tls.plain]`): what it answers when it
//! redirects — `308 Permanent Redirect` to the same path over HTTPS.

use http::uri::Authority;
use http::{StatusCode, header};

use crate::http::{Body, Request, Response};

/// The app of a plain listener that redirects to HTTPS on `https_port`.
pub(crate) fn redirect_app(https_port: u16) -> crate::App {
    crate::App::new().fallback(crate::inline(move |req: Request| {
        redirect(&req, https_port)
    }))
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
