//! REST errors: Kafka's `{"error_code":N,"message":"..."}` body.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use connect_api::{ConnectError, ErrorKind};
use serde_json::json;

/// An HTTP error response in Kafka's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status (also the body's `error_code`).
    pub status: StatusCode,
    /// What went wrong and what to do.
    pub message: String,
}

impl ApiError {
    /// An error with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }

    /// A 400 Bad Request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// A 404 Not Found.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }
}

impl From<ConnectError> for ApiError {
    /// Not found is 404, a conflict 409, a bad config or request 400, the
    /// rest 500 (as Kafka's ConnectExceptionMapper).
    fn from(e: ConnectError) -> Self {
        match e.kind() {
            ErrorKind::NotFound => ApiError::new(StatusCode::NOT_FOUND, e.message()),
            ErrorKind::Conflict => ApiError::new(StatusCode::CONFLICT, e.message()),
            ErrorKind::Config { key } => {
                // Whole-request errors (and messages that already name their
                // key) read better without the "Invalid value for ..." prefix.
                let message =
                    if key == "config" || key == "request" || e.message().contains(key.as_str()) {
                        e.message().to_string()
                    } else {
                        e.to_string()
                    };
                ApiError::new(StatusCode::BAD_REQUEST, message)
            }
            _ => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({"error_code": self.status.as_u16(), "message": self.message})),
        )
            .into_response()
    }
}
