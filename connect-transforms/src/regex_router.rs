//! regex_router (in progress).
