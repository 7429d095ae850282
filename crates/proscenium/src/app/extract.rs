//! Extractors: typed values a handler takes from the request in its signature.
//!
//! Head extractors ([`FromRequestHead`]) read only the head and may appear in any number
//! and order; one body extractor ([`FromRequest`]) may come last. Every failure is a
//! typed rejection that is itself a response.

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, Uri, Version, header};
use serde::de::DeserializeOwned;

use super::params;
use super::rejection::rejection;
use super::response::{IntoResponse, Json, Response};
use crate::http::Request;
use crate::shared::StateAccess;

/// A value extracted from the request head; handlers may take any number of them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be extracted from a request head",
    note = "only the last handler argument may read the body (`Json`, `Form`, `Bytes`, `String`, `Request`)"
)]
pub trait FromRequestHead: Sized {
    /// The response sent when extraction fails.
    type Rejection: IntoResponse;

    /// Returns the value read from `req`'s head.
    ///
    /// # Errors
    ///
    /// The rejection the client gets instead of the handler's answer.
    fn from_request_head(req: &Request) -> Result<Self, Self::Rejection>;

    /// The shared state this extractor takes, and how: `Read` and `Write` say; every
    /// other extractor takes none. A route's lock set is made of these.
    fn state_access() -> Option<StateAccess> {
        None
    }
}

/// A value extracted from the whole request, body included; the last handler argument.
///
/// `M` only tells head extractors (usable here too) from body extractors.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be extracted from a request",
    note = "handler arguments must be extractors: `Path`, `Query`, `HeaderMap`, `Json`, `Form`, `Bytes`, `String`, `Request`, ..."
)]
pub trait FromRequest<M = private::ViaBody>: Sized {
    /// The response sent when extraction fails.
    type Rejection: IntoResponse;

    /// Returns the value read from `req`.
    ///
    /// # Errors
    ///
    /// The rejection the client gets instead of the handler's answer.
    fn from_request(req: Request) -> Result<Self, Self::Rejection>;

    /// The shared state this extractor takes; see [`FromRequestHead::state_access`].
    fn state_access() -> Option<StateAccess> {
        None
    }

    /// Whether it takes the body as it arrives ([`BodyStream`](super::BodyStream) and
    /// what reads one): then an async handler's route streams its body instead of
    /// gathering it first.
    #[doc(hidden)]
    const STREAMS: bool = false;
}

pub(crate) mod private {
    /// Marks extractors that read the body.
    #[derive(Debug)]
    pub enum ViaBody {}
    /// Marks head extractors used in the last position.
    #[derive(Debug)]
    pub enum ViaHead {}
}

impl<T: FromRequestHead> FromRequest<private::ViaHead> for T {
    type Rejection = T::Rejection;

    fn from_request(req: Request) -> Result<Self, Self::Rejection> {
        T::from_request_head(&req)
    }

    fn state_access() -> Option<StateAccess> {
        T::state_access()
    }
}

rejection!(
    /// Path parameters that are missing or do not deserialize (400).
    PathRejection
);
rejection!(
    /// A query string that does not deserialize (400).
    QueryRejection
);
rejection!(
    /// A JSON body that is not declared as JSON (415), not JSON (400), or not of the
    /// expected shape (422).
    JsonRejection
);
rejection!(
    /// A body that is not UTF-8 (400).
    StringRejection
);

/// Path parameters of the matched route, deserialized into `T`.
///
/// `T` is one value for one parameter, a tuple in pattern order, or a struct by name.
///
/// # Examples
///
/// ```
/// use proscenium::{App, Path};
///
/// let app = App::new().get("/picture/:id/likes", |Path(id): Path<u64>| async move {
///     format!("likes of {id}")
/// });
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Path<T>(pub T);

impl<T: DeserializeOwned> FromRequestHead for Path<T> {
    type Rejection = PathRejection;

    fn from_request_head(req: &Request) -> Result<Self, Self::Rejection> {
        let decoded = params::decode(req.raw_params())
            .map_err(|e| PathRejection::new(StatusCode::BAD_REQUEST, e))?;
        T::deserialize(params::ParamsDeserializer::new(&decoded))
            .map(Path)
            .map_err(|e| {
                PathRejection::new(
                    StatusCode::BAD_REQUEST,
                    format!("invalid path parameter: {e}"),
                )
            })
    }
}

/// The query string, deserialized into `T`.
///
/// A key repeated (`?tag=a&tag=b`) fills a `Vec` field; a plain struct takes each key
/// once. A query that does not deserialize is 400.
///
/// # Examples
///
/// ```
/// use proscenium::{App, Query};
///
/// #[derive(serde::Deserialize)]
/// struct Search {
///     q: String,
///     #[serde(default)]
///     tag: Vec<String>,
/// }
///
/// let app = App::new().get("/search", |Query(s): Query<Search>| async move {
///     format!("{} in {}", s.q, s.tag.join(","))
/// });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Query<T>(pub T);

impl<T: DeserializeOwned> FromRequestHead for Query<T> {
    type Rejection = QueryRejection;

    fn from_request_head(req: &Request) -> Result<Self, Self::Rejection> {
        serde_html_form::from_str(req.uri().query().unwrap_or_default())
            .map(Query)
            .map_err(|e| {
                QueryRejection::new(StatusCode::BAD_REQUEST, format!("invalid query: {e}"))
            })
    }
}

macro_rules! head_extractor {
    ($ty:ty, |$req:ident| $value:expr) => {
        impl FromRequestHead for $ty {
            type Rejection = std::convert::Infallible;

            fn from_request_head($req: &Request) -> Result<Self, Self::Rejection> {
                Ok($value)
            }
        }
    };
}

head_extractor!(Method, |req| req.method().clone());
head_extractor!(Uri, |req| req.uri().clone());
head_extractor!(Version, |req| req.version());
head_extractor!(HeaderMap, |req| req.headers().clone());
head_extractor!(crate::http::RequestId, |req| req
    .id()
    .cloned()
    .unwrap_or_else(crate::http::RequestId::make));

impl IntoResponse for std::convert::Infallible {
    fn into_response(self) -> Response {
        match self {}
    }
}

impl FromRequest for Request {
    type Rejection = std::convert::Infallible;

    fn from_request(req: Request) -> Result<Self, Self::Rejection> {
        Ok(req)
    }
}

impl FromRequest for Bytes {
    type Rejection = std::convert::Infallible;

    fn from_request(req: Request) -> Result<Self, Self::Rejection> {
        Ok(req.into_parts().1)
    }
}

impl FromRequest for String {
    type Rejection = StringRejection;

    fn from_request(req: Request) -> Result<Self, Self::Rejection> {
        String::from_utf8(req.into_parts().1.into())
            .map_err(|_| StringRejection::new(StatusCode::BAD_REQUEST, "request body is not UTF-8"))
    }
}

impl<T: DeserializeOwned> FromRequest for Json<T> {
    type Rejection = JsonRejection;

    fn from_request(req: Request) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers()) {
            return Err(JsonRejection::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "expected Content-Type: application/json",
            ));
        }
        serde_json::from_slice(req.body()).map(Json).map_err(|e| {
            let status = match e.classify() {
                serde_json::error::Category::Data => StatusCode::UNPROCESSABLE_ENTITY,
                _ => StatusCode::BAD_REQUEST,
            };
            JsonRejection::new(status, format!("invalid JSON body: {e}"))
        })
    }
}

/// Returns the media type of the request's body without its parameters
/// (`application/json` of `application/json; charset=utf-8`), if it declares one.
pub(super) fn content_type(headers: &HeaderMap) -> Option<&str> {
    let mime = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    Some(mime.split(';').next().unwrap_or_default().trim())
}

/// Returns whether the request declares a JSON body (`application/json` or `+json`).
fn is_json(headers: &HeaderMap) -> bool {
    content_type(headers).is_some_and(|essence| {
        essence.eq_ignore_ascii_case("application/json")
            || essence
                .get(essence.len().saturating_sub(5)..)
                .is_some_and(|s| s.eq_ignore_ascii_case("+json"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(content_type: Option<&str>, body: &'static str) -> Request {
        let mut req = http::Request::builder().uri("/x?a=1&b=two");
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        Request::from(req.body(Bytes::from(body)).unwrap())
    }

    #[derive(serde::Deserialize)]
    struct Q {
        a: u32,
        b: String,
    }

    #[test]
    fn query_deserializes_the_query_string() {
        let Query(q) = Query::<Q>::from_request_head(&request(None, "")).unwrap();
        assert_eq!((q.a, q.b.as_str()), (1, "two"));
    }

    #[derive(serde::Deserialize)]
    struct Tags {
        #[serde(default)]
        tag: Vec<String>,
    }

    #[test]
    fn query_fills_a_vec_from_a_repeated_key() {
        let req = Request::from(
            http::Request::get("/x?tag=a&tag=b%20c")
                .body(Bytes::new())
                .unwrap(),
        );
        let Query(tags) = Query::<Tags>::from_request_head(&req).unwrap();
        assert_eq!(tags.tag, ["a", "b c"]);
    }

    #[test]
    fn json_rejections_have_their_statuses() {
        let cases = [
            (None, "{}", 415),
            (Some("application/json"), "{", 400),
            (Some("application/json"), "{\"a\": \"x\"}", 422),
            (
                Some("application/problem+json; charset=utf-8"),
                "{\"a\": 1, \"b\": \"c\"}",
                200,
            ),
        ];
        for (ct, body, status) in cases {
            let got = Json::<Q>::from_request(request(ct, body))
                .map_or_else(|r| r.status().as_u16(), |_| 200);
            assert_eq!(got, status, "{ct:?} {body}");
        }
    }

    #[test]
    fn string_refuses_invalid_utf8() {
        let req = Request::from(http::Request::new(Bytes::from_static(b"\xff")));
        assert_eq!(
            String::from_request(req).unwrap_err().status(),
            StatusCode::BAD_REQUEST
        );
    }
}
