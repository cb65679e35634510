//! predicates (in progress).
