//! AvroConverter reading Confluent-framed bytes (magic byte, schema id,
//! Avro body) against schemas in an in-memory registry.
#![no_main]

use std::sync::{Arc, OnceLock};

use connect_api::config::ConfigMap;
use connect_api::converter::Converter;
use connect_api::header::Headers;
use connect_runtime::converters::avro::{MemorySchemaRegistry, SchemaRegistryClient};
use connect_runtime::converters::AvroConverter;
use libfuzzer_sys::fuzz_target;

/// Schemas that reach every reader: primitives, unions, containers, enums,
/// fixed, logical types, nesting and recursion through an array.
const SCHEMAS: &[&str] = &[
    r#""string""#,
    r#"["null","long"]"#,
    r#"{"type":"record","name":"R","namespace":"x","fields":[
        {"name":"i","type":"int"},{"name":"l","type":"long"},
        {"name":"f","type":"float"},{"name":"d","type":"double"},
        {"name":"b","type":"boolean"},{"name":"s","type":"string"},
        {"name":"by","type":"bytes"},
        {"name":"u","type":["null","string","int"]},
        {"name":"a","type":{"type":"array","items":"long"}},
        {"name":"m","type":{"type":"map","values":"string"}},
        {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B","C"]}},
        {"name":"fx","type":{"type":"fixed","name":"F","size":4}},
        {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
        {"name":"date","type":{"type":"int","logicalType":"date"}},
        {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}"#,
    r#"{"type":"record","name":"Node","fields":[
        {"name":"v","type":"int"},
        {"name":"children","type":{"type":"array","items":"Node"}}]}"#,
];

fn registry() -> &'static (Arc<MemorySchemaRegistry>, Vec<u32>) {
    static REGISTRY: OnceLock<(Arc<MemorySchemaRegistry>, Vec<u32>)> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let registry = Arc::new(MemorySchemaRegistry::new());
        let ids = SCHEMAS
            .iter()
            .enumerate()
            .map(|(n, s)| registry.register(&format!("s{n}"), s).expect("schema"))
            .collect();
        (registry, ids)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let (registry, ids) = registry();
    let mut converter = AvroConverter::with_client(registry.clone());
    if converter.configure(&ConfigMap::new(), false).is_err() {
        return;
    }
    // High bit: the bytes as they come, framing included; otherwise a
    // valid frame for one of the schemas around the body.
    let framed;
    let bytes = if pick & 0x80 != 0 {
        data
    } else {
        let id = ids[usize::from(pick) % ids.len()];
        framed = [&[0u8][..], &id.to_be_bytes(), body].concat();
        &framed
    };
    let headers = Headers::new();
    if let Ok(read) = converter.to_connect_data("t", &headers, Some(bytes)) {
        let mut out = Vec::new();
        let _ =
            converter.from_connect_data("t", &headers, read.schema.as_ref(), &read.value, &mut out);
    }
});
