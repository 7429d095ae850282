//! `TypedHeader<T>`: a header parsed into a type of the `headers` crate, as an extractor
//! and as a response part.

use headers::{Header, HeaderMapExt};
use http::StatusCode;
use http::header::HeaderName;

use super::extract::FromRequestHead;
use super::response::{IntoResponse, Response, error};
use super::response_parts::IntoResponseParts;
use crate::http::{Body, Request};

/// A header as a type: `TypedHeader<UserAgent>`, `TypedHeader<Authorization<Bearer>>`.
///
/// As an extractor, a header that is missing or does not parse is 400 naming it (take
/// `Option<TypedHeader<T>>` for one that may be absent); as a response part, the header
/// set on the response.
///
/// # Examples
///
/// ```
/// use proscenium::App;
/// use proscenium::extract::TypedHeader;
/// use headers::{Authorization, UserAgent, authorization::Bearer};
///
/// let app = App::new()
///     .get("/agent", |TypedHeader(agent): TypedHeader<UserAgent>| async move {
///         agent.to_string()
///     })
///     .get("/me", |auth: Option<TypedHeader<Authorization<Bearer>>>| async move {
///         auth.map_or("anonymous".to_owned(), |TypedHeader(a)| a.token().to_owned())
///     });
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TypedHeader<T>(pub T);

/// A typed header that is missing or does not parse (400).
#[derive(Debug, Clone)]
pub struct TypedHeaderRejection {
    name: &'static HeaderName,
    is_missing: bool,
}

impl TypedHeaderRejection {
    /// Returns the header's name.
    pub fn name(&self) -> &HeaderName {
        self.name
    }

    /// Returns whether the header was missing (else it did not parse).
    pub fn is_missing(&self) -> bool {
        self.is_missing
    }

    /// Returns the status the client gets (400).
    pub fn status(&self) -> StatusCode {
        StatusCode::BAD_REQUEST
    }
}

impl std::fmt::Display for TypedHeaderRejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = if self.is_missing {
            "missing"
        } else {
            "invalid"
        };
        write!(f, "{why} header `{}`", self.name)
    }
}

impl std::error::Error for TypedHeaderRejection {}

impl IntoResponse for TypedHeaderRejection {
    fn into_response(self) -> Response {
        error(self.status(), self.to_string())
    }
}

impl<T: Header> FromRequestHead for TypedHeader<T> {
    type Rejection = TypedHeaderRejection;

    fn from_request_head(req: &Request) -> Result<Self, Self::Rejection> {
        let mut values = req.headers().get_all(T::name()).iter();
        let is_missing = values.size_hint() == (0, Some(0));
        T::decode(&mut values)
            .map(TypedHeader)
            .map_err(|_| TypedHeaderRejection {
                name: T::name(),
                is_missing,
            })
    }
}

impl<T: Header> IntoResponseParts for TypedHeader<T> {
    fn into_response_parts(self, mut res: Response) -> Response {
        res.headers_mut().typed_insert(self.0);
        res
    }
}

/// The header alone, on an empty 200.
impl<T: Header> IntoResponse for TypedHeader<T> {
    fn into_response(self) -> Response {
        self.into_response_parts(Response::new(Body::empty()))
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use headers::UserAgent;

    use super::*;

    fn request(agent: Option<&str>) -> Request {
        let mut req = http::Request::builder();
        if let Some(agent) = agent {
            req = req.header("user-agent", agent);
        }
        Request::from(req.body(Bytes::new()).unwrap())
    }

    #[test]
    fn names_a_missing_header() {
        let got = TypedHeader::<UserAgent>::from_request_head(&request(None)).unwrap_err();
        assert!(got.is_missing());
        assert_eq!(got.to_string(), "missing header `user-agent`");
        let TypedHeader(agent) =
            TypedHeader::<UserAgent>::from_request_head(&request(Some("curl/8"))).unwrap();
        assert_eq!(agent.as_str(), "curl/8");
    }
}
