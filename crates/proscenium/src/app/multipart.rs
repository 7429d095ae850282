//! `Multipart`: a `multipart/form-data` body read field by field (`multer` parses it)
//! from the request's [`BodyStream`], under the `multipart_*` settings of `[limits]`.

use std::borrow::Cow;
use std::marker::PhantomData;

use bytes::Bytes;
use http::{HeaderMap, StatusCode, header};

use super::body_stream::BodyStream;
use super::extract::FromRequest;
use super::response::{IntoResponse, Response, error};
use crate::http::Request;
use crate::rt::context;

/// A `multipart/form-data` body, read field by field; the last handler argument.
///
/// Fields come in the order they were sent, each read before the next is asked for.
/// The `[limits]` settings `multipart_fields`, `multipart_field` and `multipart_body`
/// bound them; past one, reading fails with a 413 [`MultipartError`].
///
/// # Examples
///
/// ```
/// use proscenium::App;
/// use proscenium::app::{Multipart, MultipartError};
///
/// let app = App::new().post("/upload", |mut form: Multipart| async move {
///     let mut seen = Vec::new();
///     while let Some(field) = form.next_field().await? {
///         let name = field.name().unwrap_or_default().to_owned();
///         let file = field.file_name().map(str::to_owned);
///         let bytes = field.bytes().await?;
///         seen.push(format!("{name} {file:?} {} bytes", bytes.len()));
///     }
///     Ok::<_, MultipartError>(seen.join("\n"))
/// });
/// ```
#[derive(Debug)]
pub struct Multipart {
    inner: multer::Multipart<'static>,
    fields: usize,
    max_fields: usize,
}

impl FromRequest for Multipart {
    type Rejection = MultipartError;

    const STREAMS: bool = true;

    fn from_request(req: Request) -> Result<Self, Self::Rejection> {
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let boundary = multer::parse_boundary(content_type).map_err(|_| {
            MultipartError::bad_request(
                "expected Content-Type: multipart/form-data with a boundary",
            )
        })?;
        let limits = context::with_current(|ctx| ctx.limits.clone()).unwrap_or_default();
        let constraints = multer::Constraints::new().size_limit(
            multer::SizeLimit::new()
                .whole_stream(limits.multipart_body)
                .per_field(limits.multipart_field),
        );
        let body = BodyStream::from_request(req)
            .unwrap_or_else(|never| match never {})
            .into_data_stream();
        Ok(Self {
            inner: multer::Multipart::with_constraints(body, boundary, constraints),
            fields: 0,
            max_fields: limits.multipart_fields,
        })
    }
}

impl Multipart {
    /// Returns the next field, or `None` after the last one.
    ///
    /// # Errors
    ///
    /// A body that is not well-formed multipart (400), or one past the limits (413).
    pub async fn next_field(&mut self) -> Result<Option<Field<'_>>, MultipartError> {
        let Some(inner) = self
            .inner
            .next_field()
            .await
            .map_err(MultipartError::from)?
        else {
            return Ok(None);
        };
        if self.fields == self.max_fields {
            return Err(MultipartError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("more than {} fields in a multipart body", self.max_fields),
            ));
        }
        self.fields += 1;
        Ok(Some(Field {
            inner,
            _multipart: PhantomData,
        }))
    }
}

/// One field of a [`Multipart`] body: its head, then its bytes as they are read.
#[derive(Debug)]
pub struct Field<'a> {
    inner: multer::Field<'static>,
    // Ties the field to its `Multipart`, so that the next field is asked for only
    // once this one is done with.
    _multipart: PhantomData<&'a mut Multipart>,
}

impl Field<'_> {
    /// Returns the field's name (`name` of its `Content-Disposition`).
    pub fn name(&self) -> Option<&str> {
        self.inner.name()
    }

    /// Returns the name of the file the field carries (`filename` of its
    /// `Content-Disposition`), if it is a file.
    pub fn file_name(&self) -> Option<&str> {
        self.inner.file_name()
    }

    /// Returns the field's `Content-Type`, if it has one.
    pub fn content_type(&self) -> Option<&str> {
        self.inner.content_type().map(|mime| mime.as_ref())
    }

    /// Returns the field's header fields.
    pub fn headers(&self) -> &HeaderMap {
        self.inner.headers()
    }

    /// Returns the next chunk of the field's bytes, or `None` at its end.
    ///
    /// # Errors
    ///
    /// As [`Multipart::next_field`].
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, MultipartError> {
        self.inner.chunk().await.map_err(MultipartError::from)
    }

    /// Returns the whole of the field's bytes.
    ///
    /// # Errors
    ///
    /// As [`Multipart::next_field`].
    pub async fn bytes(self) -> Result<Bytes, MultipartError> {
        self.inner.bytes().await.map_err(MultipartError::from)
    }

    /// Returns the field's bytes as text, decoded by the charset of its `Content-Type`
    /// (UTF-8 when it names none).
    ///
    /// # Errors
    ///
    /// As [`Multipart::next_field`].
    pub async fn text(self) -> Result<String, MultipartError> {
        self.inner.text().await.map_err(MultipartError::from)
    }
}

/// A multipart body that is not one (400), is malformed (400), or is past a limit
/// (413); it answers the client with its status and reason.
#[derive(Debug, Clone)]
pub struct MultipartError {
    status: StatusCode,
    message: Cow<'static, str>,
}

impl MultipartError {
    fn new(status: StatusCode, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    fn bad_request(message: &'static str) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// Returns the status the client gets.
    pub fn status(&self) -> StatusCode {
        self.status
    }
}

impl From<multer::Error> for MultipartError {
    fn from(e: multer::Error) -> Self {
        match e {
            multer::Error::FieldSizeExceeded { .. } | multer::Error::StreamSizeExceeded { .. } => {
                Self::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("multipart body: {e}"),
                )
            }
            _ => Self::new(
                StatusCode::BAD_REQUEST,
                format!("malformed multipart body: {e}"),
            ),
        }
    }
}

impl std::fmt::Display for MultipartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MultipartError {}

impl IntoResponse for MultipartError {
    fn into_response(self) -> Response {
        error(self.status, self.message)
    }
}
