//! `Form<T>`: an `application/x-www-form-urlencoded` body (or, on GET and HEAD, the
//! query), and the same encoding as a response.

use http::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::extract::{FromRequest, content_type};
use super::rejection::rejection;
use super::response::{IntoResponse, Response, error, with_type};
use crate::http::Request;

static FORM: &str = "application/x-www-form-urlencoded";

/// A URL-encoded form, deserialized into `T`: the body of a POST (or any method with a
/// body), the query of a GET or HEAD. Repeated keys fill `Vec` fields.
///
/// A body not declared as `application/x-www-form-urlencoded` is 415; one that does not
/// deserialize is 422 (a query, 400). As a response, `T` serialized the same way.
///
/// # Examples
///
/// ```
/// use proscenium::App;
/// use proscenium::extract::Form;
///
/// #[derive(serde::Deserialize)]
/// struct Login {
///     user: String,
///     password: String,
/// }
///
/// let app = App::new().post("/login", |Form(login): Form<Login>| async move {
///     format!("{} ({} characters)", login.user, login.password.len())
/// });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Form<T>(pub T);

rejection!(
    /// A form body not declared as a form (415) or that does not deserialize (422), or
    /// a GET's query that does not (400).
    FormRejection
);

impl<T: DeserializeOwned> FromRequest for Form<T> {
    type Rejection = FormRejection;

    fn from_request(req: Request) -> Result<Self, Self::Rejection> {
        if req.method() == Method::GET || req.method() == Method::HEAD {
            return serde_html_form::from_str(req.uri().query().unwrap_or_default())
                .map(Form)
                .map_err(|e| {
                    FormRejection::new(StatusCode::BAD_REQUEST, format!("invalid query: {e}"))
                });
        }
        if !content_type(req.headers()).is_some_and(|t| t.eq_ignore_ascii_case(FORM)) {
            return Err(FormRejection::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "expected Content-Type: application/x-www-form-urlencoded",
            ));
        }
        serde_html_form::from_bytes(req.body())
            .map(Form)
            .map_err(|e| {
                FormRejection::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    format!("invalid form body: {e}"),
                )
            })
    }
}

impl<T: Serialize> IntoResponse for Form<T> {
    fn into_response(self) -> Response {
        match serde_html_form::to_string(&self.0) {
            Ok(body) => with_type(body, FORM),
            Err(e) => error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("form encoding failed: {e}"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[derive(serde::Deserialize, Serialize)]
    struct Pet {
        name: String,
        #[serde(default)]
        tag: Vec<String>,
    }

    fn request(method: &str, uri: &str, content_type: Option<&str>, body: &'static str) -> Request {
        let mut req = http::Request::builder().method(method).uri(uri);
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        Request::from(req.body(Bytes::from(body)).unwrap())
    }

    fn status(req: Request) -> u16 {
        Form::<Pet>::from_request(req).map_or_else(|r| r.status().as_u16(), |_| 200)
    }

    #[test]
    fn reads_the_body_of_a_post_and_the_query_of_a_get() {
        let req = request("POST", "/", Some(FORM), "name=rex&tag=a&tag=b");
        let Form(pet) = Form::<Pet>::from_request(req).unwrap();
        assert_eq!((pet.name.as_str(), pet.tag.len()), ("rex", 2));
        let Form(pet) = Form::<Pet>::from_request(request("GET", "/?name=tom", None, "")).unwrap();
        assert_eq!(pet.name, "tom");
    }

    #[test]
    fn rejections_have_their_statuses() {
        assert_eq!(status(request("POST", "/", None, "name=rex")), 415);
        assert_eq!(
            status(request("POST", "/", Some("text/plain"), "name=rex")),
            415
        );
        assert_eq!(status(request("POST", "/", Some(FORM), "tag=a")), 422);
        assert_eq!(status(request("GET", "/?tag=a", None, "")), 400);
    }

    #[test]
    fn encodes_a_response() {
        let pet = Pet {
            name: "a b".into(),
            tag: vec!["x".into(), "y".into()],
        };
        let res = Form(pet).into_response();
        assert_eq!(res.headers()["content-type"], FORM);
    }
}
