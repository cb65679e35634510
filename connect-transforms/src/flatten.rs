//! flatten (in progress).
