//! insert_field (in progress).
