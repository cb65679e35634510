//! timestamp_converter (in progress).
