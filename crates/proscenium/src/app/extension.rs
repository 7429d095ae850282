//! `Extension<T>`: a value a middleware put in the request's extensions, taken by a
//! handler — how an axum app hands a middleware's finding (the signed-in user) on.

use http::StatusCode;

use super::extract::FromRequestHead;
use super::rejection::rejection;
use crate::http::Request;

rejection!(
    /// The request carries no value of the type asked for (500: a middleware that
    /// should have put it there did not run).
    ExtensionRejection
);

/// A clone of the `T` in the request's extensions.
///
/// # Examples
///
/// ```
/// use proscenium::extract::Extension;
/// use proscenium::middleware::{Next, from_fn};
/// use proscenium::{App, Request};
///
/// #[derive(Clone)]
/// struct User(String);
///
/// async fn sign_in(mut req: Request, next: Next<'static>) -> proscenium::Response {
///     req.extensions_mut().insert(User("ada".into()));
///     next.run(req).await
/// }
///
/// let app = App::new()
///     .get("/me", |Extension(User(name)): Extension<User>| async move { name })
///     .layer(from_fn(sign_in));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Extension<T>(pub T);

impl<T: Clone + Send + Sync + 'static> FromRequestHead for Extension<T> {
    type Rejection = ExtensionRejection;

    fn from_request_head(req: &Request) -> Result<Self, Self::Rejection> {
        req.extensions()
            .get::<T>()
            .cloned()
            .map(Self)
            .ok_or_else(|| {
                ExtensionRejection::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!(
                        "no `{}` in the request's extensions",
                        std::any::type_name::<T>()
                    ),
                )
            })
    }
}
