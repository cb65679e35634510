//! Pins `Schema`, `SchemaBuilder` and `Type`: Kafka's `ConnectSchema`
//! equality, the builder's set-once rules and the accessors.

use connect_api::{Schema, SchemaBuilder, Type, Value};

const ALL: [Type; 12] = [
    Type::Int8,
    Type::Int16,
    Type::Int32,
    Type::Int64,
    Type::Float32,
    Type::Float64,
    Type::Boolean,
    Type::String,
    Type::Bytes,
    Type::Array,
    Type::Map,
    Type::Struct,
];

#[test]
fn type_names_as_kafka() {
    let names: Vec<_> = ALL.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "INT8", "INT16", "INT32", "INT64", "FLOAT32", "FLOAT64", "BOOLEAN", "STRING", "BYTES",
            "ARRAY", "MAP", "STRUCT"
        ]
    );
    for t in ALL {
        assert_eq!(t.to_string(), t.name());
        assert_eq!(Type::from_name(t.name()), Some(t));
        assert_eq!(Type::from_name(&t.name().to_lowercase()), Some(t));
    }
    assert_eq!(Type::from_name(""), None);
    assert_eq!(Type::from_name("INT"), None);
}

#[test]
fn primitive_types() {
    for t in ALL {
        let expected = !matches!(t, Type::Array | Type::Map | Type::Struct);
        assert_eq!(t.is_primitive(), expected, "{t}");
    }
}

#[test]
fn predefined_schemas_and_of_type() {
    let required = [
        (Schema::int8(), Type::Int8),
        (Schema::int16(), Type::Int16),
        (Schema::int32(), Type::Int32),
        (Schema::int64(), Type::Int64),
        (Schema::float32(), Type::Float32),
        (Schema::float64(), Type::Float64),
        (Schema::boolean(), Type::Boolean),
        (Schema::string(), Type::String),
        (Schema::bytes(), Type::Bytes),
    ];
    let optional = [
        (Schema::optional_int8(), Type::Int8),
        (Schema::optional_int16(), Type::Int16),
        (Schema::optional_int32(), Type::Int32),
        (Schema::optional_int64(), Type::Int64),
        (Schema::optional_float32(), Type::Float32),
        (Schema::optional_float64(), Type::Float64),
        (Schema::optional_boolean(), Type::Boolean),
        (Schema::optional_string(), Type::String),
        (Schema::optional_bytes(), Type::Bytes),
    ];
    for (s, t) in &required {
        assert_eq!(s.ty(), *t);
        assert!(!s.is_optional());
        assert_eq!(s.name(), None);
        assert_eq!(s.version(), None);
        assert_eq!(s.doc(), None);
        assert_eq!(s.default_value(), None);
        assert_eq!(s.parameters(), None);
        let of = Schema::of_type(*t, false).unwrap();
        assert!(of.ptr_eq(s), "{t}");
        assert_eq!(of, SchemaBuilder::new(*t).build().unwrap());
    }
    for (s, t) in &optional {
        assert_eq!(s.ty(), *t);
        assert!(s.is_optional());
        let of = Schema::of_type(*t, true).unwrap();
        assert!(of.ptr_eq(s), "{t}");
        assert_eq!(of, SchemaBuilder::new(*t).optional().build().unwrap());
    }
    for t in [Type::Array, Type::Map, Type::Struct] {
        assert!(Schema::of_type(t, false).is_none());
        assert!(Schema::of_type(t, true).is_none());
    }
}

#[test]
fn builders_of_each_type() {
    let built = [
        SchemaBuilder::int8(),
        SchemaBuilder::int16(),
        SchemaBuilder::int32(),
        SchemaBuilder::int64(),
        SchemaBuilder::float32(),
        SchemaBuilder::float64(),
        SchemaBuilder::boolean(),
        SchemaBuilder::string(),
        SchemaBuilder::bytes(),
        SchemaBuilder::array(Schema::int8()),
        SchemaBuilder::map(Schema::string(), Schema::int8()),
        SchemaBuilder::struct_(),
    ];
    for (b, t) in built.into_iter().zip(ALL) {
        assert_eq!(b.ty(), t);
        assert_eq!(b.build().unwrap().ty(), t);
    }
    let array = SchemaBuilder::array(Schema::int8()).build().unwrap();
    assert_eq!(array.value_schema(), Some(&Schema::int8()));
    assert_eq!(array.key_schema(), None);
    let map = SchemaBuilder::map(Schema::string(), Schema::optional_int64())
        .build()
        .unwrap();
    assert_eq!(map.key_schema(), Some(&Schema::string()));
    assert_eq!(map.value_schema(), Some(&Schema::optional_int64()));
    assert_eq!(Schema::int8().key_schema(), None);
    assert_eq!(Schema::int8().value_schema(), None);
}

#[test]
fn attributes_are_kept() {
    let s = SchemaBuilder::int64()
        .name("com.example.Id")
        .version(3)
        .doc("the id")
        .parameter("a", "1")
        .parameters([("b", "2"), ("c", "3")])
        .optional()
        .default_value(Value::Int64(9))
        .build()
        .unwrap();
    assert_eq!(s.name(), Some("com.example.Id"));
    assert_eq!(s.version(), Some(3));
    assert_eq!(s.doc(), Some("the id"));
    assert!(s.is_optional());
    assert_eq!(s.default_value(), Some(&Value::Int64(9)));
    assert_eq!(s.parameter("a"), Some("1"));
    assert_eq!(s.parameter("c"), Some("3"));
    assert_eq!(s.parameter("zz"), None);
    let params: Vec<_> = s
        .parameters()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(params, [("a", "1"), ("b", "2"), ("c", "3")]);
    assert_eq!(Schema::int64().parameter("a"), None);
    // A parameter set again is replaced, not an error.
    let s = SchemaBuilder::string()
        .parameter("k", "1")
        .parameter("k", "2")
        .build()
        .unwrap();
    assert_eq!(s.parameter("k"), Some("2"));
    let required = SchemaBuilder::int8().required().build().unwrap();
    assert!(!required.is_optional());
    assert_eq!(required, Schema::int8());
}

#[test]
fn each_attribute_is_set_once() {
    let cases = [
        (SchemaBuilder::int8().name("a").name("b"), "name"),
        (SchemaBuilder::int8().version(1).version(1), "version"),
        (SchemaBuilder::int8().doc("a").doc("a"), "doc"),
        (SchemaBuilder::int8().required().optional(), "optional"),
        (SchemaBuilder::int8().required().required(), "optional"),
        (
            SchemaBuilder::int8()
                .optional()
                .default_value(Value::Null)
                .default_value(Value::Int8(1)),
            "default",
        ),
    ];
    for (b, attr) in cases {
        let e = b.build().unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("Invalid SchemaBuilder call: {attr} has already been set.")
        );
    }
    // The first broken rule is the one reported.
    let e = SchemaBuilder::int8()
        .name("a")
        .name("b")
        .doc("x")
        .doc("y")
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Invalid SchemaBuilder call: name has already been set."
    );
}

#[test]
fn field_rules() {
    let e = SchemaBuilder::int32()
        .field("x", Schema::int32())
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Cannot create fields on type INT32; fields exist only on STRUCT"
    );
    let e = SchemaBuilder::struct_()
        .field("", Schema::int32())
        .build()
        .unwrap_err();
    assert_eq!(e.to_string(), "fieldName cannot be null or empty.");
    let e = SchemaBuilder::struct_()
        .field("x", Schema::int32())
        .field("x", Schema::string())
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Cannot create field because of field name duplication x"
    );
}

#[test]
fn fields_in_order() {
    let s = SchemaBuilder::struct_()
        .field("a", Schema::int32())
        .field("b", Schema::optional_string())
        .field("c", Schema::bytes())
        .build()
        .unwrap();
    assert_eq!(s.field_count(), 3);
    let b = s.field("b").unwrap();
    assert_eq!(b.name(), "b");
    assert_eq!(b.index(), 1);
    assert_eq!(b.schema(), &Schema::optional_string());
    let c = s.field_at(2).unwrap();
    assert_eq!(c.name(), "c");
    assert_eq!(c.index(), 2);
    assert_eq!(c.schema(), &Schema::bytes());
    assert_eq!(s.field_at(0).unwrap().name(), "a");
    assert_eq!(s.field_at(0).unwrap().index(), 0);
    assert!(s.field_at(3).is_none());
    assert!(s.field("zz").is_none());
    let names: Vec<_> = s.fields().unwrap().map(|f| f.name()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    let indexes: Vec<_> = s.field_list().map(|f| f.index()).collect();
    assert_eq!(indexes, [0, 1, 2]);
    let e = Schema::int32().fields().err().unwrap();
    assert_eq!(e.to_string(), "Cannot list fields on non-struct type INT32");
    assert_eq!(Schema::int32().field_count(), 0);
    assert_eq!(Schema::int32().field_list().count(), 0);
    assert!(Schema::int32().field("a").is_none());
}

#[test]
fn field_defaults_are_known_at_build() {
    let plain = SchemaBuilder::struct_()
        .field("a", Schema::int32())
        .build()
        .unwrap();
    assert!(!plain.has_field_defaults());
    let with_default = SchemaBuilder::struct_()
        .field("a", Schema::int32())
        .field(
            "b",
            SchemaBuilder::int32().default_value(1).build().unwrap(),
        )
        .build()
        .unwrap();
    assert!(with_default.has_field_defaults());
    assert!(!Schema::int32().has_field_defaults());
}

#[test]
fn defaults_are_validated() {
    let e = SchemaBuilder::int32()
        .default_value(Value::from("x"))
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Invalid default value: expected INT32, got STRING"
    );
    assert!(SchemaBuilder::int32()
        .default_value(Value::Null)
        .build()
        .is_err());
    let s = SchemaBuilder::string()
        .default_value("dflt")
        .build()
        .unwrap();
    assert_eq!(s.default_value(), Some(&Value::from("dflt")));
    assert!(!s.is_optional());
}

#[test]
fn equality_compares_every_attribute() {
    let base = || {
        SchemaBuilder::struct_()
            .name("n")
            .version(1)
            .doc("d")
            .parameter("p", "v")
            .field("a", Schema::int32())
    };
    let a = base().build().unwrap();
    let b = base().build().unwrap();
    assert!(!a.ptr_eq(&b));
    assert_eq!(a, b);
    assert_eq!(a, a.clone());
    let variants = [
        SchemaBuilder::struct_()
            .name("n")
            .version(1)
            .doc("d")
            .parameter("p", "v")
            .build()
            .unwrap(),
        base().optional().build().unwrap(),
        base().field("b", Schema::int8()).build().unwrap(),
        SchemaBuilder::struct_()
            .name("other")
            .version(1)
            .doc("d")
            .parameter("p", "v")
            .field("a", Schema::int32())
            .build()
            .unwrap(),
        SchemaBuilder::struct_()
            .name("n")
            .version(2)
            .doc("d")
            .parameter("p", "v")
            .field("a", Schema::int32())
            .build()
            .unwrap(),
        SchemaBuilder::struct_()
            .name("n")
            .version(1)
            .doc("other")
            .parameter("p", "v")
            .field("a", Schema::int32())
            .build()
            .unwrap(),
        SchemaBuilder::struct_()
            .name("n")
            .version(1)
            .doc("d")
            .parameter("p", "w")
            .field("a", Schema::int32())
            .build()
            .unwrap(),
        SchemaBuilder::struct_()
            .name("n")
            .version(1)
            .doc("d")
            .parameter("p", "v")
            .field("a", Schema::int64())
            .build()
            .unwrap(),
    ];
    for v in &variants {
        assert_ne!(&a, v);
        assert_ne!(v, &a);
    }
    assert_ne!(Schema::int32(), Schema::int64());
    assert_ne!(
        SchemaBuilder::array(Schema::int8()).build().unwrap(),
        SchemaBuilder::array(Schema::int16()).build().unwrap()
    );
    assert_ne!(
        SchemaBuilder::map(Schema::int8(), Schema::int8())
            .build()
            .unwrap(),
        SchemaBuilder::map(Schema::int16(), Schema::int8())
            .build()
            .unwrap()
    );
}

#[test]
fn identity_and_address() {
    let a = Schema::string();
    let b = a.clone();
    assert!(a.ptr_eq(&b));
    assert_eq!(a.addr(), b.addr());
    let c = SchemaBuilder::string().build().unwrap();
    assert!(!a.ptr_eq(&c));
    assert_ne!(a.addr(), c.addr());
    assert_ne!(a.addr(), 0);
    assert_ne!(a.addr(), 1);
}

#[test]
fn display_and_debug() {
    assert_eq!(Schema::string().to_string(), "Schema{STRING}");
    let named = SchemaBuilder::struct_()
        .name("com.example.Foo")
        .field("zip", Schema::int32())
        .build()
        .unwrap();
    assert_eq!(named.to_string(), "Schema{com.example.Foo:STRUCT}");
    let debug = format!("{named:?}");
    assert!(debug.contains("Struct"), "{debug}");
    assert!(debug.contains("com.example.Foo"), "{debug}");
    assert!(debug.contains("fields"), "{debug}");
    assert!(debug.contains("zip"), "{debug}");
    let plain = format!("{:?}", Schema::optional_int32());
    assert!(plain.contains("Int32"), "{plain}");
    assert!(plain.contains("optional: true"), "{plain}");
    assert!(!plain.contains("fields"), "{plain}");
}

#[test]
fn to_builder_copies_everything() {
    let original = SchemaBuilder::struct_()
        .name("n")
        .version(2)
        .doc("d")
        .parameter("p", "v")
        .optional()
        .field("a", Schema::int32())
        .build()
        .unwrap();
    assert_eq!(original.to_builder().build().unwrap(), original);
    assert_eq!(original.to_builder().ty(), Type::Struct);
    let renamed = original.to_builder().name("again");
    assert!(renamed.build().is_err(), "the name is already set");
    let with_default = SchemaBuilder::int8().default_value(1i8).build().unwrap();
    let copy = with_default.to_builder().build().unwrap();
    assert_eq!(copy.default_value(), Some(&Value::Int8(1)));
    assert!(with_default
        .to_builder()
        .default_value(2i8)
        .build()
        .is_err());
    let map = SchemaBuilder::map(Schema::string(), Schema::int8())
        .build()
        .unwrap();
    assert_eq!(map.to_builder().build().unwrap(), map);
    let added = original
        .to_builder()
        .field("b", Schema::string())
        .build()
        .unwrap();
    assert_eq!(added.field_count(), 2);
    assert_eq!(added.field("b").unwrap().index(), 1);
}
