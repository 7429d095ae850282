//! Async extractors: values whose extraction may await (a session looked up in Redis or
//! over [`client`](crate::client)), taken by async handlers.
//!
//! Every head extractor is one too, through a blanket impl that extracts at once. An
//! async handler whose arguments all extract at once takes them before its future is
//! made, as before async extractors existed: no larger future, no extra allocation.
//! Only a handler with an extractor that may wait extracts inside its future.

use std::future::Future;

use super::extract::{FromRequest, FromRequestHead, private};
use super::response::{IntoResponse, Response};
use crate::http::Request;
use crate::shared::StateAccess;

/// A value extracted from the request head whose extraction may await; async handlers
/// take any number of them, in any order.
///
/// Every [`FromRequestHead`] is one too. `inline` and `blocking` handlers extract on
/// the loop without awaiting, so they take only head extractors.
///
/// # Examples
///
/// ```
/// use proscenium::{App, FromRequestParts, Request};
/// use http::StatusCode;
///
/// struct User(String);
///
/// impl FromRequestParts for User {
///     type Rejection = StatusCode;
///
///     async fn from_request_parts(req: &Request) -> Result<Self, Self::Rejection> {
///         let token = req.headers().get("x-token").cloned();
///         // A real app would await a session store here.
///         tokio::task::yield_now().await;
///         match token {
///             Some(t) if t == "secret" => Ok(User("ada".into())),
///             _ => Err(StatusCode::UNAUTHORIZED),
///         }
///     }
/// }
///
/// let app = App::new().get("/me", |User(name): User| async move { name });
/// ```
///
/// An `inline` (or `blocking`) handler cannot take it: it does not compile.
///
/// ```compile_fail
/// # use proscenium::{App, FromRequestParts, Request, inline};
/// # struct User;
/// # impl FromRequestParts for User {
/// #     type Rejection = std::convert::Infallible;
/// #     async fn from_request_parts(_: &Request) -> Result<Self, Self::Rejection> { Ok(User) }
/// # }
/// let app = App::new().get("/me", inline(|_: User| "me"));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be extracted from a request head",
    note = "only the last handler argument may read the body (`Json`, `Bytes`, `String`, `Request`)"
)]
pub trait FromRequestParts: Sized {
    /// The response sent when extraction fails.
    type Rejection: IntoResponse;

    /// Returns the value read from `req`'s head, once it is known.
    ///
    /// # Errors
    ///
    /// The rejection the client gets instead of the handler's answer.
    fn from_request_parts(req: &Request) -> impl Future<Output = Result<Self, Self::Rejection>>;

    /// The shared state this extractor takes; see [`FromRequestHead::state_access`].
    fn state_access() -> Option<StateAccess> {
        None
    }

    /// Whether extraction may wait; `false` only for head extractors, which implement
    /// [`from_request_now`](Self::from_request_now).
    #[doc(hidden)]
    const WAITS: bool = true;

    /// The value, extracted without waiting, when [`WAITS`](Self::WAITS) is `false`.
    #[doc(hidden)]
    fn from_request_now(_req: &Request) -> Option<Result<Self, Self::Rejection>> {
        None
    }
}

impl<T: FromRequestHead> FromRequestParts for T {
    type Rejection = T::Rejection;

    fn from_request_parts(req: &Request) -> impl Future<Output = Result<Self, Self::Rejection>> {
        std::future::ready(T::from_request_head(req))
    }

    fn state_access() -> Option<StateAccess> {
        T::state_access()
    }

    const WAITS: bool = false;

    fn from_request_now(req: &Request) -> Option<Result<Self, Self::Rejection>> {
        Some(T::from_request_head(req))
    }
}

/// Marks async extractors used in the last position.
#[doc(hidden)]
#[derive(Debug)]
pub enum ViaParts {}

/// The last argument of an async handler: an async extractor, or one reading the body.
///
/// `M` only tells the two apart.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be extracted from a request",
    note = "handler arguments must be extractors: `Path`, `Query`, `HeaderMap`, `Json`, `Bytes`, `String`, `Request`, or your own `FromRequestParts`"
)]
pub trait FromRequestLast<M>: Sized {
    /// Whether extraction may wait.
    const WAITS: bool;

    /// Returns the value read from `req`, or the rejection as a response.
    fn from_request_last(req: Request) -> impl Future<Output = Result<Self, Response>>;

    /// The value extracted without waiting; `None` when [`WAITS`](Self::WAITS).
    fn from_request_now(req: Request) -> Option<Result<Self, Response>>;

    /// The shared state this extractor takes.
    fn state_access() -> Option<StateAccess>;

    /// Whether it takes the body as it arrives.
    const STREAMS: bool;
}

impl<T: FromRequestParts> FromRequestLast<ViaParts> for T {
    const WAITS: bool = T::WAITS;
    const STREAMS: bool = false;

    async fn from_request_last(req: Request) -> Result<Self, Response> {
        T::from_request_parts(&req)
            .await
            .map_err(IntoResponse::into_response)
    }

    // A rejection is a whole response; boxing it would only add an allocation to
    // every rejected request.
    #[allow(clippy::result_large_err)]
    fn from_request_now(req: Request) -> Option<Result<Self, Response>> {
        T::from_request_now(&req).map(|r| r.map_err(IntoResponse::into_response))
    }

    fn state_access() -> Option<StateAccess> {
        T::state_access()
    }
}

impl<T: FromRequest<private::ViaBody>> FromRequestLast<private::ViaBody> for T {
    const WAITS: bool = false;
    const STREAMS: bool = T::STREAMS;

    async fn from_request_last(req: Request) -> Result<Self, Response> {
        T::from_request(req).map_err(IntoResponse::into_response)
    }

    fn from_request_now(req: Request) -> Option<Result<Self, Response>> {
        Some(T::from_request(req).map_err(IntoResponse::into_response))
    }

    fn state_access() -> Option<StateAccess> {
        T::state_access()
    }
}

/// A tuple of async handler arguments taken from one request; generated for every arity.
pub trait FromRequestPartsArgs<M>: Sized {
    /// Whether any argument's extraction may wait.
    const WAITS: bool;

    /// Whether the last argument takes the body as it arrives.
    const STREAMS: bool;

    /// Returns the extracted arguments, or the first rejection as a response.
    fn from_request_later(req: Request) -> impl Future<Output = Result<Self, Response>> + 'static;

    /// The arguments extracted without waiting; `None` when [`WAITS`](Self::WAITS).
    fn from_request_now(req: Request) -> Option<Result<Self, Response>>;

    /// The shared state the arguments take, in order.
    fn state_accesses() -> Vec<StateAccess>;
}

macro_rules! impl_parts_arity {
    ($($head:ident),*; $last:ident) => {
        impl<M: 'static, $($head: $crate::app::FromRequestParts + 'static,)* $last: $crate::app::FromRequestLast<M> + 'static>
            $crate::app::FromRequestPartsArgs<M> for ($($head,)* $last,)
        {
            const WAITS: bool = $($head::WAITS ||)* $last::WAITS;
            const STREAMS: bool = $last::STREAMS;

            #[allow(non_snake_case)]
            fn from_request_later(req: $crate::http::Request) -> impl ::std::future::Future<Output = Result<Self, $crate::app::Response>> + 'static {
                async move {
                    $(let $head = $head::from_request_parts(&req).await.map_err($crate::app::IntoResponse::into_response)?;)*
                    let $last = $last::from_request_last(req).await?;
                    Ok(($($head,)* $last,))
                }
            }

            #[allow(non_snake_case)]
            fn from_request_now(req: $crate::http::Request) -> Option<Result<Self, $crate::app::Response>> {
                $(let $head = match $head::from_request_now(&req)? {
                    Ok(value) => value,
                    Err(rejection) => return Some(Err($crate::app::IntoResponse::into_response(rejection))),
                };)*
                Some($last::from_request_now(req)?.map(|$last| ($($head,)* $last,)))
            }

            fn state_accesses() -> Vec<$crate::shared::StateAccess> {
                [$($head::state_access(),)* $last::state_access()].into_iter().flatten().collect()
            }
        }
    };
}

pub(super) use impl_parts_arity;

impl FromRequestPartsArgs<()> for () {
    const WAITS: bool = false;
    const STREAMS: bool = false;

    async fn from_request_later(_: Request) -> Result<Self, Response> {
        Ok(())
    }

    fn from_request_now(_: Request) -> Option<Result<Self, Response>> {
        Some(Ok(()))
    }

    fn state_accesses() -> Vec<StateAccess> {
        Vec::new()
    }
}
