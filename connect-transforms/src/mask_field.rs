//! mask_field (in progress).
