//! hoist_field (in progress).
