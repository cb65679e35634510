//! set_schema_metadata (in progress).
