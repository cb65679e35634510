//! SimpleHeaderConverter reading header bytes, and `Values` parsing text.
#![no_main]

use connect_api::config::ConfigMap;
use connect_api::converter::HeaderConverter;
use connect_runtime::converters::SimpleHeaderConverter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut converter = SimpleHeaderConverter::default();
    if converter.configure(&ConfigMap::new()).is_err() {
        return;
    }
    if let Ok(read) = converter.to_connect_header("t", "h", Some(data)) {
        let mut out = Vec::new();
        let _ = converter.from_connect_header("t", "h", read.schema.as_ref(), &read.value, &mut out);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = connect_api::values::parse_string(text);
    }
});
