//! drop_headers (in progress).
