//! The contract every SMT should keep, checked in one call.
//!
//! [`assert_smt_contract`] configures fresh instances of a transformation
//! and checks, for source and sink records alike:
//!
//! - every key of its `config_def` has documentation, and every key of the
//!   minimal config is declared there;
//! - `configure` with no config gives a config error, or works with
//!   defaults, as the contract says (and never panics);
//! - a tombstone (null value, with and without a value schema) is kept
//!   unchanged, kept with a null value, transformed, dropped, or rejected
//!   with a data error, as the contract says;
//! - headers it does not own are preserved, in order;
//! - schemaless input is handled, or rejected with a data error.
//!
//! A panic anywhere counts as a violation.
//!
//! ```
//! use connect_testkit::contract::{assert_smt_contract, EmptyConfig, SmtContract, Tombstones};
//! use connect_testkit::config;
//! use connect_transforms::insert_header::InsertHeader;
//!
//! assert_smt_contract(
//!     InsertHeader::new,
//!     &SmtContract::new("InsertHeader", config(&[("header", "app"), ("value.literal", "x")]))
//!         .empty_config(EmptyConfig::ConfigError)
//!         .tombstones(Tombstones::Kept),
//! );
//! ```

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use connect_api::logical;
use connect_api::transform::Transformation;
use connect_api::Type;
use connect_api::{
    ConfigMap, ConnectError, ErrorKind, Header, Headers, Record, Schema, SchemaBuilder, SinkRecord,
    SourceRecord, Struct, Value,
};
use connect_transforms::registry::TransformRegistry;

use crate::smt::TestRecord;

/// What a transformation does with a tombstone (a record whose value is null).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tombstones {
    /// Returned exactly as given.
    Unchanged,
    /// Returned with a null value; topic, key or headers may change (routers,
    /// key and header SMTs).
    Kept,
    /// Returned, value possibly no longer null (HoistField wraps it).
    Transformed,
    /// Dropped.
    Dropped,
    /// Rejected with a data error.
    Rejected,
}

/// What a transformation does with schemaless keys and values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schemaless {
    /// Handled (transformed, passed or dropped).
    Handled,
    /// Rejected with a data error.
    Rejected,
}

/// What `configure` with an empty config does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmptyConfig {
    /// A config error naming a required key.
    ConfigError,
    /// Works with the documented defaults.
    Defaults,
}

/// What one SMT promises; start from [`SmtContract::new`].
#[derive(Debug, Clone)]
pub struct SmtContract {
    /// Name used in messages.
    pub name: String,
    /// A minimal valid config.
    pub config: ConfigMap,
    /// Tombstone behaviour (default [`Tombstones::Unchanged`]).
    pub tombstones: Tombstones,
    /// Schemaless behaviour (default [`Schemaless::Handled`]).
    pub schemaless: Schemaless,
    /// Empty-config behaviour (default [`EmptyConfig::Defaults`]).
    pub empty_config: EmptyConfig,
    /// A record with schemas the SMT accepts (default [`sample_record`]).
    pub sample: Record,
    /// A schemaless record (default [`schemaless_sample_record`]).
    pub schemaless_sample: Record,
}

impl SmtContract {
    /// A contract for `name` configured with `config`, with the defaults
    /// listed on each field.
    pub fn new(name: impl Into<String>, config: ConfigMap) -> Self {
        SmtContract {
            name: name.into(),
            config,
            tombstones: Tombstones::Unchanged,
            schemaless: Schemaless::Handled,
            empty_config: EmptyConfig::Defaults,
            sample: sample_record(),
            schemaless_sample: schemaless_sample_record(),
        }
    }
    /// Set the tombstone behaviour.
    pub fn tombstones(mut self, t: Tombstones) -> Self {
        self.tombstones = t;
        self
    }
    /// Set the schemaless behaviour.
    pub fn schemaless(mut self, s: Schemaless) -> Self {
        self.schemaless = s;
        self
    }
    /// Set the empty-config behaviour.
    pub fn empty_config(mut self, e: EmptyConfig) -> Self {
        self.empty_config = e;
        self
    }
    /// Set the sample record with schemas.
    pub fn sample(mut self, r: Record) -> Self {
        self.sample = r;
        self
    }
    /// Set the schemaless sample record.
    pub fn schemaless_sample(mut self, r: Record) -> Self {
        self.schemaless_sample = r;
        self
    }
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// `source` or `sink`.
    pub record_kind: &'static str,
    /// `config docs`, `empty config`, `tombstones`, `headers`, `schemaless`, ...
    pub rule: &'static str,
    /// What happened.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{} records] {}: {}",
            self.record_kind, self.rule, self.message
        )
    }
}

/// Key schema of [`sample_record`]: `com.example.OrderKey{id:INT64}`.
fn key_schema() -> Schema {
    SchemaBuilder::struct_()
        .name("com.example.OrderKey")
        .field("id", Schema::int64())
        .build()
        .expect("static schema")
}

/// A record with schemas: key `{id: 42}`, value
/// `com.example.Order{id, name, amount, created (Timestamp), note (optional),
/// address{city, zip}}`, topic `orders`, partition 0, a timestamp and one
/// header (`source`).
pub fn sample_record() -> Record {
    let address_schema = SchemaBuilder::struct_()
        .field("city", Schema::string())
        .field("zip", Schema::string())
        .build()
        .expect("static schema");
    let value_schema = SchemaBuilder::struct_()
        .name("com.example.Order")
        .field("id", Schema::int64())
        .field("name", Schema::string())
        .field("amount", Schema::float64())
        .field("created", logical::timestamp_schema())
        .field("note", Schema::optional_string())
        .field("address", address_schema.clone())
        .build()
        .expect("static schema");
    let build = || -> connect_api::Result<Record> {
        let mut key = Struct::new(key_schema())?;
        key.put("id", 42i64)?;
        let mut address = Struct::new(address_schema)?;
        address.put("city", "Lyon")?.put("zip", "69001")?;
        let mut value = Struct::new(value_schema.clone())?;
        value
            .put("id", 42i64)?
            .put("name", "widget")?
            .put("amount", 9.5f64)?
            .put("created", Value::Timestamp(1_700_000_000_000))?
            .put("address", address)?;
        let mut headers = Headers::new();
        headers.add_string("source", "testkit");
        Ok(
            Record::new("orders", Some(value_schema), Value::Struct(value))
                .with_key(Some(key_schema()), Value::Struct(key))
                .with_partition(0)
                .with_timestamp(1_700_000_000_000)
                .with_headers(headers),
        )
    };
    build().expect("static record")
}

/// The schemaless twin of [`sample_record`]: string-keyed maps.
pub fn schemaless_sample_record() -> Record {
    let address = Value::string_map([("city", Value::from("Lyon")), ("zip", Value::from("69001"))]);
    let value = Value::string_map([
        ("id", Value::Int64(42)),
        ("name", Value::from("widget")),
        ("amount", Value::Float64(9.5)),
        ("created", Value::Int64(1_700_000_000_000)),
        ("address", address),
    ]);
    let mut headers = Headers::new();
    headers.add_string("source", "testkit");
    Record::new("orders", None, value)
        .with_key(None, Value::string_map([("id", Value::Int64(42))]))
        .with_partition(0)
        .with_timestamp(1_700_000_000_000)
        .with_headers(headers)
}

/// Headers the contract adds to check that they survive (a repeated key,
/// two schemas). No SMT config should name them.
fn probe_headers() -> Vec<Header> {
    vec![
        Header::new(
            "testkit.probe",
            Some(Schema::string()),
            Value::from("first"),
        ),
        Header::new("testkit.count", Some(Schema::int32()), Value::Int32(7)),
        Header::new(
            "testkit.probe",
            Some(Schema::string()),
            Value::from("second"),
        ),
    ]
}

fn is_probe(h: &Header) -> bool {
    h.key().starts_with("testkit.")
}

/// `schema` made optional (`to_builder` cannot: optionality is already set).
fn optional_copy(schema: &Schema) -> Option<Schema> {
    if schema.is_optional() {
        return Some(schema.clone());
    }
    let mut b = match schema.ty() {
        Type::Array => SchemaBuilder::array(schema.value_schema()?.clone()),
        Type::Map => {
            SchemaBuilder::map(schema.key_schema()?.clone(), schema.value_schema()?.clone())
        }
        ty => SchemaBuilder::new(ty),
    };
    for f in schema.field_list() {
        b = b.field(f.name(), f.schema().clone());
    }
    if let Some(n) = schema.name() {
        b = b.name(n);
    }
    if let Some(v) = schema.version() {
        b = b.version(v);
    }
    if let Some(d) = schema.doc() {
        b = b.doc(d);
    }
    for (k, v) in schema.parameters().into_iter().flatten() {
        b = b.parameter(k.clone(), v.clone());
    }
    b.optional().build().ok()
}

/// Run `f`, turning a panic into an error message.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic".into());
        format!("panicked: {msg}")
    })
}

fn is_data(e: &ConnectError) -> bool {
    matches!(e.kind(), ErrorKind::Data { .. })
}

type Make<'a, R> = &'a dyn Fn() -> Box<dyn Transformation<R>>;

struct Checker<'a, R: TestRecord> {
    make: Make<'a, R>,
    contract: &'a SmtContract,
    out: Vec<Violation>,
}

impl<R: TestRecord> Checker<'_, R> {
    fn violation(&mut self, rule: &'static str, message: String) {
        self.out.push(Violation {
            record_kind: R::KIND,
            rule,
            message,
        });
    }

    /// A fresh instance configured with the minimal config.
    fn configured(&mut self) -> Option<Box<dyn Transformation<R>>> {
        let mut t = (self.make)();
        match guarded(|| t.configure(&self.contract.config)) {
            Ok(Ok(())) => Some(t),
            Ok(Err(e)) => {
                self.violation("minimal config", format!("configure failed: {e}"));
                None
            }
            Err(p) => {
                self.violation("minimal config", format!("configure {p}"));
                None
            }
        }
    }

    fn apply(&mut self, record: Record, what: &str) -> Option<Result<Option<R>, ConnectError>> {
        let mut t = self.configured()?;
        match guarded(|| t.apply(R::from_record(record, 0))) {
            Ok(r) => Some(r),
            Err(p) => {
                self.violation("apply", format!("{what}: apply {p}"));
                None
            }
        }
    }

    fn config_def(&mut self) {
        let def = match guarded(|| (self.make)().config_def()) {
            Ok(d) => d,
            Err(p) => return self.violation("config docs", format!("config_def {p}")),
        };
        for key in def.keys() {
            if key.documentation.trim().is_empty() {
                self.violation(
                    "config docs",
                    format!("config key '{}' has no documentation", key.name),
                );
            }
        }
        for k in self.contract.config.keys() {
            if def.key(k).is_none() {
                self.violation(
                    "config docs",
                    format!("config key '{k}' is accepted but not declared in config_def"),
                );
            }
        }
    }

    fn empty_config(&mut self) {
        let mut t = (self.make)();
        let result = match guarded(|| t.configure(&ConfigMap::new())) {
            Ok(r) => r,
            Err(p) => return self.violation("empty config", format!("configure {{}} {p}")),
        };
        match (self.contract.empty_config, result) {
            (EmptyConfig::ConfigError, Ok(())) => self.violation(
                "empty config",
                "configure with no config succeeded; the contract expects a config error".into(),
            ),
            (EmptyConfig::ConfigError, Err(e)) if !matches!(e.kind(), ErrorKind::Config { .. }) => {
                self.violation(
                    "empty config",
                    format!("configure with no config gave a {:?} error, not a config error naming the key: {e}", e.kind()),
                )
            }
            (EmptyConfig::Defaults, Err(e)) => self.violation(
                "empty config",
                format!("configure with no config failed, but the contract expects defaults: {e}"),
            ),
            _ => {}
        }
    }

    fn tombstone(&mut self, value_schema: Option<Schema>) {
        let mut input = self.contract.sample.clone();
        input.value = Value::Null;
        input.value_schema = value_schema;
        let shown = format!(
            "tombstone ({})",
            if input.value_schema.is_some() {
                "optional value schema"
            } else {
                "no value schema"
            }
        );
        let Some(result) = self.apply(input.clone(), &shown) else {
            return;
        };
        let expected = self.contract.tombstones;
        let problem = match (expected, result) {
            (Tombstones::Unchanged, Ok(Some(out))) if *out.record() == input => None,
            (Tombstones::Unchanged, Ok(Some(out))) => Some(format!(
                "changed: {}",
                crate::diff::diff_record(&input, out.record())
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
            (Tombstones::Kept, Ok(Some(out))) if out.record().value.is_null() => None,
            (Tombstones::Kept, Ok(Some(out))) => Some(format!(
                "value became {}",
                crate::diff::render_value(&out.record().value)
            )),
            (Tombstones::Transformed, Ok(Some(_))) | (Tombstones::Dropped, Ok(None)) => None,
            (Tombstones::Rejected, Err(e)) if is_data(&e) => None,
            (_, Ok(None)) => Some("dropped".into()),
            (_, Ok(Some(_))) => Some("returned a record".into()),
            (_, Err(e)) => Some(format!("failed with {:?} error: {e}", e.kind())),
        };
        if let Some(p) = problem {
            self.violation("tombstones", format!("{shown} {p}; expected {expected:?}"));
        }
    }

    fn headers(&mut self, mut input: Record, what: &str) {
        for h in probe_headers() {
            input.headers.push(h);
        }
        let Some(result) = self.apply(input, what) else {
            return;
        };
        match result {
            Ok(Some(out)) => {
                let kept: Vec<Header> = out
                    .record()
                    .headers
                    .iter()
                    .filter(|h| is_probe(h))
                    .cloned()
                    .collect();
                if kept != probe_headers() {
                    let keys: Vec<String> = kept
                        .iter()
                        .map(|h| format!("{}={}", h.key(), h.value()))
                        .collect();
                    self.violation(
                        "headers",
                        format!("{what}: headers testkit.probe=first, testkit.count=7, testkit.probe=second became {keys:?}"),
                    );
                }
            }
            Ok(None) => {}
            Err(e) => self.violation(
                "sample",
                format!("{what} rejected (the contract's sample must be accepted): {e}"),
            ),
        }
    }

    fn schemaless(&mut self) {
        let input = self.contract.schemaless_sample.clone();
        match self.contract.schemaless {
            Schemaless::Handled => self.headers(input, "schemaless sample"),
            Schemaless::Rejected => match self.apply(input, "schemaless sample") {
                None => {}
                Some(Err(e)) if is_data(&e) => {}
                Some(Err(e)) => self.violation(
                    "schemaless",
                    format!(
                        "rejected with a {:?} error, not a data error: {e}",
                        e.kind()
                    ),
                ),
                Some(Ok(_)) => self.violation(
                    "schemaless",
                    "accepted schemaless input; the contract expects a data error".into(),
                ),
            },
        }
    }

    fn run(mut self) -> Vec<Violation> {
        self.config_def();
        self.empty_config();
        if self.configured().is_none() {
            return self.out;
        }
        self.tombstone(None);
        let optional = self
            .contract
            .sample
            .value_schema
            .as_ref()
            .and_then(optional_copy);
        if optional.is_some() {
            self.tombstone(optional);
        }
        let sample = self.contract.sample.clone();
        self.headers(sample, "sample");
        self.schemaless();
        self.out
    }
}

/// Every violation of `contract` by transformations from `make`, for
/// records of type `R`.
pub fn check_smt_contract_for<R: TestRecord>(
    make: &dyn Fn() -> Box<dyn Transformation<R>>,
    contract: &SmtContract,
) -> Vec<Violation> {
    Checker {
        make,
        contract,
        out: Vec::new(),
    }
    .run()
}

/// Every violation of `contract`, for source and sink records.
pub fn check_smt_contract<T, F>(make: F, contract: &SmtContract) -> Vec<Violation>
where
    T: Transformation<SourceRecord> + Transformation<SinkRecord> + 'static,
    F: Fn() -> T,
{
    let mut v = check_smt_contract_for::<SourceRecord>(
        &|| Box::new(make()) as Box<dyn Transformation<SourceRecord>>,
        contract,
    );
    v.extend(check_smt_contract_for::<SinkRecord>(
        &|| Box::new(make()) as Box<dyn Transformation<SinkRecord>>,
        contract,
    ));
    v
}

/// Every violation of `contract` by the transform registered as `class` in
/// `registry`, for the record types it is registered for; a violation when
/// it is registered for neither.
pub fn check_registered_smt_contract(
    registry: &TransformRegistry,
    class: &str,
    contract: &SmtContract,
) -> Vec<Violation> {
    let mut v = Vec::new();
    let mut found = false;
    if registry.create_transform::<SourceRecord>(class).is_some() {
        found = true;
        v.extend(check_smt_contract_for::<SourceRecord>(
            &|| {
                registry
                    .create_transform(class)
                    .map(|(_, t)| t)
                    .expect("checked above")
            },
            contract,
        ));
    }
    if registry.create_transform::<SinkRecord>(class).is_some() {
        found = true;
        v.extend(check_smt_contract_for::<SinkRecord>(
            &|| {
                registry
                    .create_transform(class)
                    .map(|(_, t)| t)
                    .expect("checked above")
            },
            contract,
        ));
    }
    if !found {
        v.push(Violation {
            record_kind: "any",
            rule: "registry",
            message: format!("'{class}' is not a registered transform"),
        });
    }
    v
}

/// Panic with every violation of `contract` (see [`check_smt_contract`]).
#[track_caller]
pub fn assert_smt_contract<T, F>(make: F, contract: &SmtContract)
where
    T: Transformation<SourceRecord> + Transformation<SinkRecord> + 'static,
    F: Fn() -> T,
{
    let v = check_smt_contract(make, contract);
    if !v.is_empty() {
        let lines: Vec<String> = v.iter().map(|v| format!("  {v}")).collect();
        panic!(
            "{} breaks the SMT contract:\n{}",
            contract.name,
            lines.join("\n")
        );
    }
}

/// `cases` records from [`strategies::record`](crate::strategies::record)
/// (every schema shape, schemaless data, tombstones), from a fixed seed so
/// the same records come back on every run.
pub fn generated_records(cases: u32) -> Vec<Record> {
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

    let mut runner = TestRunner::new_with_rng(
        Config::with_cases(cases),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let strategy = crate::strategies::record();
    (0..cases)
        .filter_map(|_| strategy.new_tree(&mut runner).ok().map(|t| t.current()))
        .collect()
}

/// Apply transformations from `make`, configured with `config`, to
/// `cases` [`generated_records`]; see [`check_smt_on_records_for`].
pub fn check_smt_on_generated_for<R: TestRecord>(
    make: &dyn Fn() -> Box<dyn Transformation<R>>,
    config: &ConfigMap,
    cases: u32,
) -> Vec<Violation> {
    check_smt_on_records_for(make, config, &generated_records(cases))
}

/// Apply transformations from `make`, configured with `config`, to
/// `records` wrapped as `R`: nothing may panic, a failure must be a data
/// error, and every key and value returned must match its schema. At most
/// five violations are reported.
pub fn check_smt_on_records_for<R: TestRecord>(
    make: &dyn Fn() -> Box<dyn Transformation<R>>,
    config: &ConfigMap,
    records: &[Record],
) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut push = |rule: &'static str, message: String| {
        if out.len() < 5 {
            out.push(Violation {
                record_kind: R::KIND,
                rule,
                message,
            });
        }
    };
    let mut t = make();
    match guarded(|| t.configure(config)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            push("generated records", format!("configure failed: {e}"));
            return out;
        }
        Err(p) => {
            push("generated records", format!("configure {p}"));
            return out;
        }
    }
    for (case, input) in records.iter().enumerate() {
        let shown = || {
            format!(
                "record {case}: key {} {}, value {} {}",
                crate::diff::render_schema(input.key_schema.as_ref()),
                crate::diff::render_value(&input.key),
                crate::diff::render_schema(input.value_schema.as_ref()),
                crate::diff::render_value(&input.value),
            )
        };
        let result = match guarded(|| t.apply(R::from_record(input.clone(), case as i64))) {
            Ok(r) => r,
            Err(p) => {
                push("generated records", format!("{}: apply {p}", shown()));
                // A panicking instance may be in any state: start afresh.
                t = make();
                let _ = guarded(|| t.configure(config));
                continue;
            }
        };
        match result {
            Err(e) if !is_data(&e) => push(
                "generated records",
                format!(
                    "{}: failed with a {:?} error, not a data error: {e}",
                    shown(),
                    e.kind()
                ),
            ),
            Ok(Some(r)) => {
                let r = r.record();
                for (side, schema, value) in [
                    ("key", &r.key_schema, &r.key),
                    ("value", &r.value_schema, &r.value),
                ] {
                    if let Some(s) = schema {
                        if let Err(e) = s.validate_value(value) {
                            push(
                                "generated records",
                                format!(
                                    "{}: the output {side} does not match its schema {}: {e}",
                                    shown(),
                                    crate::diff::render_schema(Some(s))
                                ),
                            );
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}
