//! `.properties` files with their escapes and continuation lines.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = connect_runtime::properties::parse_properties(&text);
});
