//! chain (in progress).
