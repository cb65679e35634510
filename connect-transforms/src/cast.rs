//! cast (in progress).
