//! replace_field (in progress).
