//! Cookie jars: the request's cookies as an extractor, and the changes a handler makes
//! to them as `Set-Cookie` headers when the jar is returned as a response part.
//!
//! [`SignedCookieJar`] and [`PrivateCookieJar`] are keyed by a [`Key`] the app registers
//! as state (`App::state(Key::generate())`), as axum-extra takes it from its state: the
//! jars take it the way [`Read<Key>`](crate::state::Read) does, so a route whose handler
//! takes one is refused at start, named, when the app has no key (never a failure per
//! request), and `proscenium routes` shows the route reading it. Nothing writes the key,
//! so its read lock is never waited for.

use std::marker::PhantomData;

use cookie::{Cookie, Key};
use http::HeaderMap;
use http::header::{COOKIE, HeaderValue, SET_COOKIE};

use super::extract::FromRequestHead;
use super::response::{IntoResponse, Response};
use super::response_parts::IntoResponseParts;
use super::state_extractors::{Read, StateRejection};
use crate::http::{Body, Request};
use crate::shared::StateAccess;

/// The request's cookies; cookies added or removed are sent back as `Set-Cookie` when
/// the jar is part of the response.
///
/// Values are percent-decoded when read and percent-encoded when sent.
///
/// # Examples
///
/// ```
/// use proscenium::App;
/// use proscenium::extract::cookie::{Cookie, CookieJar};
///
/// let app = App::new().get("/visit", |jar: CookieJar| async move {
///     let visits: u32 = jar.get("visits").and_then(|c| c.value().parse().ok()).unwrap_or(0);
///     let cookie = Cookie::build(("visits", (visits + 1).to_string())).http_only(true);
///     (jar.add(cookie), format!("visit {}", visits + 1))
/// });
/// ```
#[derive(Debug, Clone, Default)]
pub struct CookieJar {
    jar: cookie::CookieJar,
}

impl CookieJar {
    /// Returns the cookies of `headers`' `Cookie` fields; those that do not parse are
    /// left out.
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let mut jar = cookie::CookieJar::new();
        let fields = headers.get_all(COOKIE).iter();
        for field in fields.filter_map(|v| v.to_str().ok()) {
            for cookie in Cookie::split_parse_encoded(field.to_owned()).flatten() {
                jar.add_original(cookie);
            }
        }
        Self { jar }
    }

    /// Returns the cookie named `name`.
    pub fn get(&self, name: &str) -> Option<&Cookie<'static>> {
        self.jar.get(name)
    }

    /// Returns the jar with `cookie` added (sent as `Set-Cookie`).
    #[must_use]
    // The name axum-extra's jars use, which code ported from axum calls.
    #[allow(clippy::should_implement_trait)]
    pub fn add(mut self, cookie: impl Into<Cookie<'static>>) -> Self {
        self.jar.add(cookie);
        self
    }

    /// Returns the jar with `cookie` removed (sent as an expired `Set-Cookie`; give it
    /// the path and domain it was set with).
    #[must_use]
    pub fn remove(mut self, cookie: impl Into<Cookie<'static>>) -> Self {
        self.jar.remove(cookie);
        self
    }

    /// Returns the cookies, as received and as changed.
    pub fn iter(&self) -> impl Iterator<Item = &Cookie<'static>> {
        self.jar.iter()
    }
}

impl FromRequestHead for CookieJar {
    type Rejection = std::convert::Infallible;

    fn from_request_head(req: &Request) -> Result<Self, Self::Rejection> {
        Ok(Self::from_headers(req.headers()))
    }
}

/// Sends the changes made to `jar` as `Set-Cookie` fields.
fn set_cookies(jar: &cookie::CookieJar, mut res: Response) -> Response {
    for cookie in jar.delta() {
        // An encoded cookie is visible ASCII: it is always a valid header value.
        if let Ok(value) = HeaderValue::try_from(cookie.encoded().to_string()) {
            res.headers_mut().append(SET_COOKIE, value);
        }
    }
    res
}

impl IntoResponseParts for CookieJar {
    fn into_response_parts(self, res: Response) -> Response {
        set_cookies(&self.jar, res)
    }
}

impl IntoResponse for CookieJar {
    fn into_response(self) -> Response {
        self.into_response_parts(Response::new(Body::empty()))
    }
}

/// How a keyed jar protects its cookies.
pub trait Protection: private::Sealed {
    #[doc(hidden)]
    fn get(jar: &cookie::CookieJar, key: &Key, name: &str) -> Option<Cookie<'static>>;
    #[doc(hidden)]
    fn add(jar: &mut cookie::CookieJar, key: &Key, cookie: Cookie<'static>);
}

mod private {
    pub trait Sealed {}
    impl Sealed for super::Signed {}
    impl Sealed for super::Private {}
}

/// Signed cookies: readable by the client, but a changed one is not accepted.
#[derive(Debug, Clone, Copy)]
pub enum Signed {}

/// Private cookies: encrypted and authenticated, neither readable nor changeable.
#[derive(Debug, Clone, Copy)]
pub enum Private {}

impl Protection for Signed {
    fn get(jar: &cookie::CookieJar, key: &Key, name: &str) -> Option<Cookie<'static>> {
        jar.signed(key).get(name)
    }

    fn add(jar: &mut cookie::CookieJar, key: &Key, cookie: Cookie<'static>) {
        jar.signed_mut(key).add(cookie);
    }
}

impl Protection for Private {
    fn get(jar: &cookie::CookieJar, key: &Key, name: &str) -> Option<Cookie<'static>> {
        jar.private(key).get(name)
    }

    fn add(jar: &mut cookie::CookieJar, key: &Key, cookie: Cookie<'static>) {
        jar.private_mut(key).add(cookie);
    }
}

/// A cookie jar whose cookies are signed ([`SignedCookieJar`]) or encrypted
/// ([`PrivateCookieJar`]) with the app's [`Key`].
///
/// A cookie that was tampered with, or made with another key, is absent: `get` returns
/// `None`, never an error.
///
/// # Examples
///
/// ```
/// use proscenium::App;
/// use proscenium::extract::cookie::{Cookie, Key, SignedCookieJar};
///
/// let app = App::new()
///     .state(Key::generate())
///     .post("/login", |jar: SignedCookieJar| async move {
///         (jar.add(Cookie::new("user", "ann")), "welcome")
///     })
///     .get("/me", |jar: SignedCookieJar| async move {
///         jar.get("user").map_or("anonymous".to_owned(), |c| c.value().to_owned())
///     });
/// assert!(app.check_state().is_ok());
/// ```
pub struct KeyedCookieJar<P: Protection> {
    jar: cookie::CookieJar,
    key: Key,
    _protection: PhantomData<P>,
}

/// A jar of signed cookies; see [`KeyedCookieJar`].
pub type SignedCookieJar = KeyedCookieJar<Signed>;

/// A jar of private (encrypted) cookies; see [`KeyedCookieJar`].
pub type PrivateCookieJar = KeyedCookieJar<Private>;

impl<P: Protection> KeyedCookieJar<P> {
    /// Returns an empty jar keyed by `key`.
    pub fn new(key: Key) -> Self {
        Self::from_headers(&HeaderMap::new(), key)
    }

    /// Returns the cookies of `headers`' `Cookie` fields, keyed by `key`.
    pub fn from_headers(headers: &HeaderMap, key: Key) -> Self {
        Self {
            jar: CookieJar::from_headers(headers).jar,
            key,
            _protection: PhantomData,
        }
    }

    /// Returns the cookie named `name`, verified (and decrypted), if it is genuine.
    pub fn get(&self, name: &str) -> Option<Cookie<'static>> {
        P::get(&self.jar, &self.key, name)
    }

    /// Returns the jar with `cookie` added, signed or encrypted.
    #[must_use]
    // The name axum-extra's jars use, which code ported from axum calls.
    #[allow(clippy::should_implement_trait)]
    pub fn add(mut self, cookie: impl Into<Cookie<'static>>) -> Self {
        P::add(&mut self.jar, &self.key, cookie.into());
        self
    }

    /// Returns the jar with `cookie` removed (sent as an expired `Set-Cookie`).
    #[must_use]
    pub fn remove(mut self, cookie: impl Into<Cookie<'static>>) -> Self {
        self.jar.remove(cookie);
        self
    }
}

impl<P: Protection> std::fmt::Debug for KeyedCookieJar<P> {
    // The key stays out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedCookieJar")
            .field("cookies", &self.jar.iter().count())
            .finish_non_exhaustive()
    }
}

impl<P: Protection> FromRequestHead for KeyedCookieJar<P> {
    type Rejection = StateRejection;

    fn from_request_head(req: &Request) -> Result<Self, Self::Rejection> {
        let key = Key::clone(&*Read::<Key>::from_request_head(req)?);
        Ok(Self::from_headers(req.headers(), key))
    }

    fn state_access() -> Option<StateAccess> {
        Read::<Key>::state_access()
    }
}

impl<P: Protection> IntoResponseParts for KeyedCookieJar<P> {
    fn into_response_parts(self, res: Response) -> Response {
        set_cookies(&self.jar, res)
    }
}

impl<P: Protection> IntoResponse for KeyedCookieJar<P> {
    fn into_response(self) -> Response {
        self.into_response_parts(Response::new(Body::empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(cookie: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(COOKIE, HeaderValue::try_from(cookie).unwrap());
        headers
    }

    /// The `name=value` of the first `Set-Cookie` of `jar` as a response part.
    fn sent(jar: impl IntoResponseParts) -> String {
        let res = jar.into_response_parts(Response::new(Body::empty()));
        let value = res.headers()[SET_COOKIE].to_str().unwrap();
        value.split(';').next().unwrap().to_owned()
    }

    #[test]
    fn reads_percent_encoded_cookies_and_sends_changes_only() {
        let jar = CookieJar::from_headers(&headers("a=1; b=x%20y"));
        assert_eq!(jar.get("b").unwrap().value(), "x y");
        assert_eq!(sent(jar.add(Cookie::new("c", "p q"))), "c=p%20q");
    }

    #[test]
    fn a_tampered_keyed_cookie_is_absent() {
        let key = Key::generate();
        let signed = sent(SignedCookieJar::new(key.clone()).add(Cookie::new("user", "ann")));
        let private = sent(PrivateCookieJar::new(key.clone()).add(Cookie::new("user", "ann")));
        let signed_back = SignedCookieJar::from_headers(&headers(&signed), key.clone());
        assert_eq!(signed_back.get("user").unwrap().value(), "ann");
        let private_back = PrivateCookieJar::from_headers(&headers(&private), key.clone());
        assert_eq!(private_back.get("user").unwrap().value(), "ann");
        let forged = signed.replace("ann", "bob");
        assert!(
            SignedCookieJar::from_headers(&headers(&forged), key.clone())
                .get("user")
                .is_none()
        );
        assert!(
            PrivateCookieJar::from_headers(&headers(&signed), key)
                .get("user")
                .is_none()
        );
    }
}
