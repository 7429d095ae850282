//! Why a request could not be read, and the one table that maps each reason to its status.

use http::StatusCode;

/// A request the server refuses before it reaches the application.
///
/// Every variant closes the connection after its error response: once framing is in
/// doubt, nothing later on the wire can be trusted (RFC 9112 §11.2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ParseError {
    /// Syntax the grammar does not allow, or a framing ambiguity.
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    /// The request line and header section exceed `max_head`.
    #[error("header section too large")]
    HeadTooLarge,
    /// More header fields than `max_headers`.
    #[error("too many header fields")]
    TooManyHeaders,
    /// The request target exceeds `max_uri`.
    #[error("request target too long")]
    UriTooLong,
    /// The body exceeds `max_body`.
    #[error("request body too large")]
    BodyTooLarge,
    /// A transfer coding other than chunked.
    #[error("unsupported transfer coding")]
    UnsupportedTransferCoding,
    /// A request line whose version is not `HTTP/x.y`: not HTTP/1 at all (answered 400,
    /// or on a cleartext port that speaks HTTP/2, closed as an invalid preface).
    #[error("not an HTTP/1 request line")]
    NotHttp1,
    /// A version other than HTTP/1.0 or HTTP/1.1.
    #[error("unsupported HTTP version")]
    Version,
    /// An `Expect` value other than `100-continue`.
    #[error("unsupported expectation")]
    Expectation,
    /// The header section or body did not arrive in time.
    #[error("request timed out")]
    Timeout,
    /// No room to buffer or spool the body: the server's budget for bodies is spent,
    /// or the allocator or the disk refused.
    #[error("no room to buffer the request body; try again shortly")]
    NoRoom,
}

impl From<crate::http::intake::NoRoom> for ParseError {
    fn from(_: crate::http::intake::NoRoom) -> Self {
        Self::NoRoom
    }
}

impl ParseError {
    /// Returns the status the client gets for this error.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Self::Malformed(_) | Self::NotHttp1 => StatusCode::BAD_REQUEST,
            Self::HeadTooLarge | Self::TooManyHeaders => {
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
            }
            Self::UriTooLong => StatusCode::URI_TOO_LONG,
            Self::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedTransferCoding => StatusCode::NOT_IMPLEMENTED,
            Self::Version => StatusCode::HTTP_VERSION_NOT_SUPPORTED,
            Self::Expectation => StatusCode::EXPECTATION_FAILED,
            Self::Timeout => StatusCode::REQUEST_TIMEOUT,
            Self::NoRoom => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl From<httparse::Error> for ParseError {
    fn from(e: httparse::Error) -> Self {
        match e {
            httparse::Error::TooManyHeaders => Self::TooManyHeaders,
            httparse::Error::Version => Self::Version,
            httparse::Error::HeaderName => Self::Malformed("invalid header name"),
            httparse::Error::HeaderValue => Self::Malformed("invalid header value"),
            httparse::Error::NewLine => Self::Malformed("invalid line ending"),
            httparse::Error::Token => Self::Malformed("invalid token"),
            httparse::Error::Status => Self::Malformed("invalid status"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_its_status() {
        let table = [
            (ParseError::Malformed("x"), 400),
            (ParseError::HeadTooLarge, 431),
            (ParseError::TooManyHeaders, 431),
            (ParseError::UriTooLong, 414),
            (ParseError::BodyTooLarge, 413),
            (ParseError::UnsupportedTransferCoding, 501),
            (ParseError::Version, 505),
            (ParseError::Expectation, 417),
            (ParseError::Timeout, 408),
            (ParseError::NoRoom, 503),
        ];
        for (error, status) in table {
            assert_eq!(error.status().as_u16(), status, "{error}");
        }
    }
}
