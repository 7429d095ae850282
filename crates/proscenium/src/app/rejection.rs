//! Rejections: the typed errors extractors fail with.
//!
//! Each is a struct a handler can take as `Result<Json<T>, JsonRejection>` and inspect
//! (its [`status`](JsonRejection::status) and message), and each is a response: a
//! bodiless error whose message the server renders when it sends it, as JSON
//! (`{"error": "...", "status": 422}`) when the request's `Accept` prefers
//! `application/json`, else as HTML for a browser or plain text. The connection keeps
//! `Accept` for its error pages anyway, so a request that is not rejected pays nothing.

/// Declares a rejection: a status and a message, shown to the client.
macro_rules! rejection {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            status: http::StatusCode,
            message: std::borrow::Cow<'static, str>,
        }

        impl $name {
            fn new(
                status: http::StatusCode,
                message: impl Into<std::borrow::Cow<'static, str>>,
            ) -> Self {
                Self { status, message: message.into() }
            }

            /// Returns the status the client gets.
            pub fn status(&self) -> http::StatusCode {
                self.status
            }

            /// Returns the message the client gets.
            pub fn message(&self) -> &str {
                &self.message
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.message)
            }
        }

        impl std::error::Error for $name {}

        impl $crate::app::IntoResponse for $name {
            fn into_response(self) -> $crate::app::Response {
                $crate::app::error(self.status, self.message)
            }
        }
    };
}

pub(super) use rejection;
