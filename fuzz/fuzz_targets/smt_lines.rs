//! `connect-smt` input lines: the JSON record, its JsonConverter envelopes,
//! and a chain of transforms over what they hold. The binary's own source
//! is compiled in, so this runs exactly what the tool runs.
#![no_main]

#[allow(dead_code, unreachable_pub)]
#[path = "../../connect-worker/src/bin/connect-smt.rs"]
mod smt;

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;

/// A chain that reads every part of a record: fields, nesting, types,
/// headers, topic.
const CHAIN: &str = "
errors.tolerance=all
transforms=flat,cast,insert,mask,hoist,route,header
transforms.flat.type=Flatten$Value
transforms.cast.type=Cast$Value
transforms.cast.spec=a:string,b:int64
transforms.insert.type=InsertField$Value
transforms.insert.topic.field=t
transforms.insert.offset.field=o
transforms.mask.type=MaskField$Value
transforms.mask.fields=c
transforms.hoist.type=HoistField$Key
transforms.hoist.field=k
transforms.route.type=RegexRouter
transforms.route.regex=(.*)-raw
transforms.route.replacement=$1
transforms.header.type=InsertHeader
transforms.header.header=h
transforms.header.value.literal=1
";

thread_local! {
    /// Built once: compiling the chain (its regex) costs more than a line.
    static TOOL: RefCell<smt::Tool> = RefCell::new(
        smt::Tool::new(&connect_runtime::properties::parse_properties(CHAIN))
            .expect("the chain config is valid"),
    );
}

fuzz_target!(|data: &[u8]| {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    TOOL.with(|tool| {
        let _ = tool.borrow_mut().run(data, &mut out, &mut err);
    });
});
