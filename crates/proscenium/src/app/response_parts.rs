//! Response parts: headers (and cookies, typed headers) a tuple puts in front of a body,
//! as in `(StatusCode::CREATED, jar, [("location", "/users/7")], "made")`.

use http::StatusCode;
use http::header::{HeaderMap, HeaderName, HeaderValue};

use super::response::{IntoResponse, Response, error};

/// Adds to a response built from something else: headers, cookies.
///
/// Tuples of up to four parts before a body are responses, with a [`StatusCode`] first
/// if wanted.
///
/// # Examples
///
/// ```
/// use proscenium::{HeaderMap, IntoResponse, StatusCode};
///
/// let mut headers = HeaderMap::new();
/// headers.insert("x-total", "3".parse().unwrap());
/// let res = (StatusCode::CREATED, headers, [("location", "/users/7")], "made").into_response();
/// assert_eq!(res.status(), StatusCode::CREATED);
/// assert_eq!(res.headers()["x-total"], "3");
/// assert_eq!(res.headers()["location"], "/users/7");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a part of a response",
    note = "parts before the body are header maps, `[(name, value); N]` arrays, typed headers and cookie jars"
)]
pub trait IntoResponseParts {
    /// Returns `res` with this part added.
    fn into_response_parts(self, res: Response) -> Response;
}

/// The map's fields replace the response's fields of the same names (a
/// `content-type` given here wins over the body's).
impl IntoResponseParts for HeaderMap {
    fn into_response_parts(self, mut res: Response) -> Response {
        res.headers_mut().extend(self);
        res
    }
}

/// Headers by name and value, as a [`HeaderMap`] of them; a name or value that is not
/// valid makes the response 500.
impl<K, V, const N: usize> IntoResponseParts for [(K, V); N]
where
    K: TryInto<HeaderName>,
    V: TryInto<HeaderValue>,
{
    fn into_response_parts(self, res: Response) -> Response {
        let mut headers = HeaderMap::with_capacity(N);
        for (k, v) in self {
            match (k.try_into(), v.try_into()) {
                (Ok(k), Ok(v)) => headers.append(k, v),
                _ => return error(StatusCode::INTERNAL_SERVER_ERROR, "invalid response header"),
            };
        }
        headers.into_response_parts(res)
    }
}

macro_rules! parts_before_body {
    ($($part:ident),+) => {
        impl<$($part: IntoResponseParts,)+ R: IntoResponse> IntoResponse for ($($part,)+ R) {
            #[allow(non_snake_case)]
            fn into_response(self) -> Response {
                let ($($part,)+ body) = self;
                let res = body.into_response();
                $(let res = $part.into_response_parts(res);)+
                res
            }
        }

        impl<$($part: IntoResponseParts,)+ R: IntoResponse> IntoResponse
            for (StatusCode, $($part,)+ R)
        {
            #[allow(non_snake_case)]
            fn into_response(self) -> Response {
                let (status, $($part,)+ body) = self;
                let mut res = ($($part,)+ body).into_response();
                *res.status_mut() = status;
                res
            }
        }
    };
}

parts_before_body!(P1);
parts_before_body!(P1, P2);
parts_before_body!(P1, P2, P3);
parts_before_body!(P1, P2, P3, P4);

#[cfg(test)]
mod tests {
    use http::header::CONTENT_TYPE;

    use super::*;

    #[test]
    fn a_header_given_as_a_part_replaces_the_bodys() {
        let res = (
            [(CONTENT_TYPE, "text/csv"), (CONTENT_TYPE, "text/x-csv")],
            "a,b",
        )
            .into_response();
        let types: Vec<_> = res.headers().get_all(CONTENT_TYPE).iter().collect();
        assert_eq!(types, ["text/csv", "text/x-csv"]);
    }
}
