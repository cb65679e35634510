//! JsonConverter reading bytes from a topic, with and without schemas; what
//! it reads must write back.
#![no_main]

use connect_api::config::ConfigMap;
use connect_api::converter::Converter;
use connect_api::header::Headers;
use connect_runtime::converters::JsonConverter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    let mut config = ConfigMap::new();
    config.insert(
        "schemas.enable".into(),
        if mode & 1 == 0 { "true" } else { "false" }.into(),
    );
    if mode & 2 != 0 {
        config.insert("decimal.format".into(), "NUMERIC".into());
    }
    let mut converter = JsonConverter::new();
    if converter.configure(&config, mode & 4 != 0).is_err() {
        return;
    }
    let headers = Headers::new();
    if let Ok(read) = converter.to_connect_data("t", &headers, Some(bytes)) {
        let mut out = Vec::new();
        let _ =
            converter.from_connect_data("t", &headers, read.schema.as_ref(), &read.value, &mut out);
    }
});
