//! Converters: Kafka-compatible JSON, String, ByteArray, numbers, headers and Avro.
//!
//! Every converter here implements [`Converter`](connect_api::Converter) and,
//! as in Kafka, all but Avro also implement
//! [`HeaderConverter`](connect_api::HeaderConverter). [`registry`] resolves
//! Kafka class names and aliases (`org.apache.kafka.connect.json.JsonConverter`,
//! `JsonConverter`, `Json`) and builds configured key, value and header
//! converters from a worker or connector config.

mod byte_array;
mod number;
mod simple_header;
mod string;
mod task;

pub mod json;
pub mod registry;

#[cfg(feature = "avro")]
pub mod avro;

pub use byte_array::ByteArrayConverter;
pub use json::{DecimalFormat, JsonConverter};
pub use number::{
    BooleanConverter, BooleanKind, DoubleConverter, DoubleKind, FloatConverter, FloatKind,
    IntegerConverter, IntegerKind, LongConverter, LongKind, NumberConverter, NumberKind,
    ShortConverter, ShortKind,
};
pub use registry::{ConverterRegistry, ConverterRole};
pub use simple_header::SimpleHeaderConverter;
pub use string::{StringConverter, CONVERTER_ENCODING};
pub use task::{TaskConverters, JSON_CONVERTER};

#[cfg(feature = "avro")]
pub use avro::AvroConverter;

use connect_api::config::{ConfigKey, ConfigType, Importance};

/// Kafka's `converter.type` key (`key`, `value` or `header`), which the
/// runtime adds to every converter's config; declared so it is never
/// reported as unknown.
pub(crate) fn converter_type_key() -> ConfigKey {
    ConfigKey::new("converter.type", ConfigType::String)
        .optional()
        .importance(Importance::Low)
        .doc("How this converter is used: key, value or header (set by the runtime).")
}

/// Implement `HeaderConverter` for a `Converter` the way Kafka's converters
/// do: a header value is converted exactly like a record value.
macro_rules! header_converter_via_converter {
    ($($ty:ty),* $(,)?) => {$(
        impl connect_api::HeaderConverter for $ty {
            fn configure(&mut self, config: &connect_api::ConfigMap) -> connect_api::Result<()> {
                connect_api::Converter::configure(self, config, false)
            }
            fn config_def(&self) -> connect_api::ConfigDef {
                connect_api::Converter::config_def(self)
            }
            fn from_connect_header(
                &mut self,
                topic: &str,
                header_key: &str,
                schema: Option<&connect_api::Schema>,
                value: &connect_api::Value,
                out: &mut Vec<u8>,
            ) -> connect_api::Result<connect_api::Serialized> {
                let headers = connect_api::Headers::new();
                connect_api::Converter::from_connect_data(
                    self, topic, &headers, schema, value, out,
                )
                .map_err(|e| e.context(format_args!("header '{header_key}'")))
            }
            fn to_connect_header(
                &mut self,
                topic: &str,
                header_key: &str,
                bytes: Option<&[u8]>,
            ) -> connect_api::Result<connect_api::SchemaAndValue> {
                let headers = connect_api::Headers::new();
                connect_api::Converter::to_connect_data(self, topic, &headers, bytes)
                    .map_err(|e| e.context(format_args!("header '{header_key}'")))
            }
        }
    )*};
}
pub(crate) use header_converter_via_converter;
