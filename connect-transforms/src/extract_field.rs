//! extract_field (in progress).
