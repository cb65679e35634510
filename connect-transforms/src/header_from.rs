//! header_from (in progress).
