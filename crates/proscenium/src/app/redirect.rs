//! `Redirect`: a response that sends the client elsewhere.

use http::StatusCode;
use http::header::{HeaderValue, LOCATION};

use super::response::{IntoResponse, Response, error};
use crate::http::Body;

/// A redirect: a status and a `Location`, no body.
///
/// # Examples
///
/// ```
/// use proscenium::{IntoResponse, StatusCode};
/// use proscenium::response::Redirect;
///
/// let res = Redirect::to("/login?next=%2Fhome").into_response();
/// assert_eq!(res.status(), StatusCode::SEE_OTHER);
/// assert_eq!(res.headers()["location"], "/login?next=%2Fhome");
/// ```
#[derive(Debug, Clone)]
pub struct Redirect {
    status: StatusCode,
    // None for a location that cannot be a header value (a control character): the
    // response is then a 500 instead of a panic where it was made.
    location: Option<HeaderValue>,
}

impl Redirect {
    /// Returns a 303 See Other to `uri`: the client follows with a GET (after a form's
    /// POST, say).
    pub fn to(uri: &str) -> Self {
        Self::with_status(StatusCode::SEE_OTHER, uri)
    }

    /// Returns a 307 Temporary Redirect to `uri`: the client repeats its method and body.
    pub fn temporary(uri: &str) -> Self {
        Self::with_status(StatusCode::TEMPORARY_REDIRECT, uri)
    }

    /// Returns a 308 Permanent Redirect to `uri`: as 307, and the client may remember it.
    pub fn permanent(uri: &str) -> Self {
        Self::with_status(StatusCode::PERMANENT_REDIRECT, uri)
    }

    fn with_status(status: StatusCode, uri: &str) -> Self {
        Self {
            status,
            location: HeaderValue::try_from(uri).ok(),
        }
    }

    /// Returns the redirect's status.
    pub fn status_code(&self) -> StatusCode {
        self.status
    }

    /// Returns where it sends the client, if that is a valid header value.
    pub fn location(&self) -> Option<&str> {
        self.location.as_ref().and_then(|v| v.to_str().ok())
    }
}

impl IntoResponse for Redirect {
    fn into_response(self) -> Response {
        let Some(location) = self.location else {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "redirect location is not a valid header value",
            );
        };
        let mut res = Response::new(Body::empty());
        *res.status_mut() = self.status;
        res.headers_mut().insert(LOCATION, location);
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_axums() {
        let statuses = [
            Redirect::to("/"),
            Redirect::temporary("/"),
            Redirect::permanent("/"),
        ]
        .map(|r| r.into_response().status().as_u16());
        assert_eq!(statuses, [303, 307, 308]);
    }

    #[test]
    fn a_location_with_a_control_character_is_a_500() {
        let res = Redirect::to("/a\nb").into_response();
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!res.headers().contains_key(LOCATION));
    }
}
