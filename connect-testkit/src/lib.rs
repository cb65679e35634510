//! Placeholder crate root; filled in by its issue.
