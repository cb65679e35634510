//! filter (in progress).
