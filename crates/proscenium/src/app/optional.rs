//! `Option<T>` and `Result<T, T::Rejection>` of any extractor: the handler decides what
//! a failed extraction means instead of the client getting the rejection.

use std::convert::Infallible;

use super::extract::{FromRequest, FromRequestHead};
use crate::http::Request;
use crate::shared::StateAccess;

/// `None` where `T` would reject the request.
///
/// # Examples
///
/// ```
/// use proscenium::{App, Query};
///
/// #[derive(serde::Deserialize)]
/// struct Page {
///     n: u32,
/// }
///
/// let app = App::new().get("/list", |page: Option<Query<Page>>| async move {
///     format!("page {}", page.map_or(1, |Query(p)| p.n))
/// });
/// ```
impl<T: FromRequestHead> FromRequestHead for Option<T> {
    type Rejection = Infallible;

    fn from_request_head(req: &Request) -> Result<Self, Self::Rejection> {
        Ok(T::from_request_head(req).ok())
    }

    fn state_access() -> Option<StateAccess> {
        T::state_access()
    }
}

/// `T`'s rejection as a value, for the handler to match on.
///
/// # Examples
///
/// ```
/// use proscenium::{App, IntoResponse, Json, StatusCode};
/// use proscenium::extract::JsonRejection;
///
/// let app = App::new().post("/echo", |body: Result<Json<serde_json::Value>, JsonRejection>| async move {
///     match body {
///         Ok(Json(value)) => Json(value).into_response(),
///         Err(rejection) => (StatusCode::BAD_REQUEST, rejection.message().to_owned()).into_response(),
///     }
/// });
/// ```
impl<T: FromRequestHead> FromRequestHead for Result<T, T::Rejection> {
    type Rejection = Infallible;

    fn from_request_head(req: &Request) -> Result<Self, Self::Rejection> {
        Ok(T::from_request_head(req))
    }

    fn state_access() -> Option<StateAccess> {
        T::state_access()
    }
}

/// `None` where the body extractor `T` would reject the request.
impl<T: FromRequest> FromRequest for Option<T> {
    type Rejection = Infallible;

    fn from_request(req: Request) -> Result<Self, Self::Rejection> {
        Ok(T::from_request(req).ok())
    }

    fn state_access() -> Option<StateAccess> {
        T::state_access()
    }

    const STREAMS: bool = T::STREAMS;
}

/// The body extractor `T`'s rejection as a value, for the handler to match on.
impl<T: FromRequest> FromRequest for Result<T, T::Rejection> {
    type Rejection = Infallible;

    fn from_request(req: Request) -> Result<Self, Self::Rejection> {
        Ok(T::from_request(req))
    }

    fn state_access() -> Option<StateAccess> {
        <T as FromRequest>::state_access()
    }

    const STREAMS: bool = T::STREAMS;
}
