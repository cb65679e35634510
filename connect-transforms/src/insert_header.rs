//! insert_header (in progress).
