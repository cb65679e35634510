//! value_to_key (in progress).
