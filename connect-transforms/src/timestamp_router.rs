//! timestamp_router (in progress).
