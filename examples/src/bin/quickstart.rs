//! Quickstart: builds a record with a schema and prints it, so a newcomer
//! sees the data model in action before the worker is there.
#![allow(clippy::print_stdout)]

use connect_api::{Record, Schema, SchemaBuilder, Struct, Value};

fn main() -> Result<(), connect_api::ConnectError> {
    let schema = SchemaBuilder::struct_()
        .name("com.example.Line")
        .field("line", Schema::string())
        .field("number", Schema::int64())
        .build()?;
    for (n, text) in ["firest line", "second line"].iter().enumerate() {
        let mut value = Struct::new(schema.clone())?;
        value.put("line", *text)?.put("number", n as i64)?;
        value.validate()?;
        let record = Record::new("connect-test", Some(schema.clone()), Value::Struct(value));
        println!("{} {}", record.topic, record.value);
    }
    Ok(())
}
