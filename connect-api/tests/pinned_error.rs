//! Pins `ConnectError`: kinds (the runtime's retry and tolerance logic reads
//! them), messages, field paths and the source chain.

use std::error::Error as _;

use connect_api::{ConnectError, ErrorKind, SourceMap};

#[test]
fn constructors_set_kind_and_message() {
    let cases = [
        (
            ConnectError::config("k", "bad"),
            ErrorKind::Config { key: "k".into() },
        ),
        (
            ConnectError::data("bad"),
            ErrorKind::Data {
                path: String::new(),
            },
        ),
        (
            ConnectError::data_at("a.b", "bad"),
            ErrorKind::Data { path: "a.b".into() },
        ),
        (
            ConnectError::schema_builder("bad"),
            ErrorKind::SchemaBuilder,
        ),
        (ConnectError::retriable("bad"), ErrorKind::Retriable),
        (ConnectError::not_found("bad"), ErrorKind::NotFound),
        (ConnectError::conflict("bad"), ErrorKind::Conflict),
        (ConnectError::other("bad"), ErrorKind::Other),
        (ConnectError::new(ErrorKind::Other, "bad"), ErrorKind::Other),
    ];
    for (e, kind) in cases {
        assert_eq!(e.kind(), &kind);
        assert_eq!(e.message(), "bad");
        assert_eq!(e.is_retriable(), kind == ErrorKind::Retriable, "{kind:?}");
        assert!(e.source().is_none());
    }
    let mut partition = SourceMap::new();
    partition.insert("file".into(), "a".into());
    let e = ConnectError::offset_invalid(partition.clone(), "expired");
    assert_eq!(e.kind(), &ErrorKind::OffsetInvalid { partition });
    assert_eq!(e.to_string(), "expired");
    assert!(!e.is_retriable());
}

#[test]
fn display_prefixes_key_or_path() {
    assert_eq!(
        ConnectError::config("batch.size", "must be positive").to_string(),
        "Invalid value for configuration batch.size: must be positive"
    );
    assert_eq!(
        ConnectError::config("topic", "topic is required").to_string(),
        "topic is required"
    );
    assert_eq!(ConnectError::data("plain").to_string(), "plain");
    assert_eq!(
        ConnectError::data_at("zip", "expected INT32").to_string(),
        "zip: expected INT32"
    );
    assert_eq!(ConnectError::retriable("later").to_string(), "later");
    assert_eq!(ConnectError::other("x").message(), "x");
}

#[test]
fn in_field_builds_the_path() {
    let e = ConnectError::data("boom").in_field("zip");
    assert_eq!(e.kind(), &ErrorKind::Data { path: "zip".into() });
    assert_eq!(e.to_string(), "zip: boom");
    let e = e.in_field("address").in_field("[0]");
    assert_eq!(e.to_string(), "[0].address.zip: boom");
    let e = ConnectError::data_at("[3]", "boom").in_field("items");
    assert_eq!(e.to_string(), "items[3]: boom");
    assert_eq!(e.message(), "boom");
    // Other kinds have no path.
    let e = ConnectError::other("boom").in_field("zip");
    assert_eq!(e.to_string(), "boom");
    assert_eq!(e.kind(), &ErrorKind::Other);
}

#[test]
fn context_prefixes_the_message() {
    let e = ConnectError::retriable("broker down").context("transform 'mask'");
    assert_eq!(e.message(), "transform 'mask': broker down");
    assert_eq!(e.to_string(), "transform 'mask': broker down");
    assert!(e.is_retriable());
    let e = ConnectError::data_at("f", "bad").context("header 'h'");
    assert_eq!(e.to_string(), "f: header 'h': bad");
}

#[test]
fn with_source_keeps_the_cause() {
    let e = ConnectError::retriable("cannot reach")
        .with_source(std::io::Error::other("connection refused"));
    assert_eq!(e.to_string(), "cannot reach");
    assert!(e.is_retriable());
    assert_eq!(
        e.source().map(ToString::to_string).as_deref(),
        Some("connection refused")
    );
}
