//! `AvroConverter`: Confluent's `io.confluent.connect.avro.AvroConverter`.
//!
//! Records are framed in Confluent's wire format ([`wire`]): magic byte 0,
//! the 4-byte big-endian schema id, then the Avro binary datum. Schemas map
//! as Confluent's `AvroData` maps them (see [`mapping`](self) notes below)
//! and are registered under `<topic>-key` / `<topic>-value` (or the record
//! name strategies) through a [`SchemaRegistryClient`].
//!
//! Per-schema work is cached: the first record of a schema converts it to
//! Avro and registers it; later records of that schema (same object or an
//! equal one) reuse the Avro schema and id, so no registry call and no
//! schema conversion happens per record. Reading caches by schema id.
//!
//! Mapping (Confluent's `AvroData`): INT8/INT16 are `int` with
//! `connect.type`; optional is a union with `null`; STRUCT is a `record`;
//! MAP with required STRING keys is an Avro `map`, other MAPs an array of
//! `io.confluent.connect.avro.MapEntry` records; logical types carry
//! `logicalType`; `connect.name`, `connect.version`, `connect.doc`,
//! `connect.parameters` and `connect.default` keep the rest.

mod codec;
mod http;
mod mapping;
mod registry;
pub mod wire;

use std::fmt;
use std::sync::Arc;

use apache_avro::schema::Schema as Avro;
use connect_api::config::{validators::ValidString, ConfigKey, ConfigType, Importance};
use connect_api::{
    ConfigDef, ConfigMap, ConnectError, Converter, Headers, Result, Schema, SchemaAndValue,
    Serialized, Value,
};

pub use http::HttpSchemaRegistry;
pub use registry::{MemorySchemaRegistry, SchemaRegistryClient};

use codec::Names;
use connect_api::cache::{Lru, SchemaCache};
use mapping::MappingOptions;

/// Config key: the registry URL(s); `mock://<scope>` uses an in-memory registry.
pub const SCHEMA_REGISTRY_URL: &str = "schema.registry.url";
/// Config key: register new schemas (else look them up).
pub const AUTO_REGISTER_SCHEMAS: &str = "auto.register.schemas";
/// Config key: write the `connect.*` schema properties.
pub const CONNECT_META_DATA: &str = "connect.meta.data";
/// Config key: schemas cached per direction.
pub const SCHEMAS_CACHE_CONFIG: &str = "schemas.cache.config";
/// Config key: where basic-auth credentials come from (`USER_INFO` or `URL`).
pub const BASIC_AUTH_CREDENTIALS_SOURCE: &str = "basic.auth.credentials.source";
/// Config key: `user:password` for the registry.
pub const BASIC_AUTH_USER_INFO: &str = "basic.auth.user.info";
/// Config key: subject naming for keys.
pub const KEY_SUBJECT_NAME_STRATEGY: &str = "key.subject.name.strategy";
/// Config key: subject naming for values.
pub const VALUE_SUBJECT_NAME_STRATEGY: &str = "value.subject.name.strategy";

const TOPIC_NAME_STRATEGY: &str = "io.confluent.kafka.serializers.subject.TopicNameStrategy";
const RECORD_NAME_STRATEGY: &str = "io.confluent.kafka.serializers.subject.RecordNameStrategy";
const TOPIC_RECORD_NAME_STRATEGY: &str =
    "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy";

/// Largest allocation apache-avro may make while decoding one datum, so a
/// corrupt length prefix cannot ask for hundreds of megabytes.
const MAX_AVRO_ALLOCATION: usize = 64 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SubjectStrategy {
    Topic,
    Record,
    TopicRecord,
}

/// Everything needed to write records of one Connect schema.
struct WritePlan {
    avro: Avro,
    names: Names,
    text: String,
    record_name: Option<String>,
}

#[derive(Clone)]
struct WriteEntry {
    plan: Arc<WritePlan>,
    /// Schema id per topic (the subject depends on the topic).
    ids: Vec<(Arc<str>, u32)>,
}

/// Everything needed to read records written with one schema id.
struct ReadPlan {
    avro: Avro,
    connect: Schema,
}

/// Confluent-compatible Avro converter (not a header converter, as in Confluent).
///
/// ```
/// use std::sync::Arc;
/// use connect_api::{Converter, Headers, Schema, SchemaBuilder, Struct, Value};
/// use connect_converters::avro::{AvroConverter, MemorySchemaRegistry};
///
/// let registry = Arc::new(MemorySchemaRegistry::new());
/// let mut avro = AvroConverter::with_client(registry.clone());
/// let schema = SchemaBuilder::struct_().name("com.example.User").field("name", Schema::string()).build().unwrap();
/// let mut user = Struct::new(schema.clone()).unwrap();
/// user.put("name", "Ada").unwrap();
/// let mut out = Vec::new();
/// avro.from_connect_data("users", &Headers::new(), Some(&schema), &Value::Struct(user.clone()), &mut out).unwrap();
/// assert_eq!(&out[..5], &[0, 0, 0, 0, 1]); // magic byte, schema id 1
/// let back = avro.to_connect_data("users", &Headers::new(), Some(&out)).unwrap();
/// assert_eq!(back.schema.as_ref(), Some(&schema));
/// assert_eq!(back.value, Value::Struct(user));
/// ```
pub struct AvroConverter {
    client: Option<Arc<dyn SchemaRegistryClient>>,
    injected: bool,
    is_key: bool,
    auto_register: bool,
    options: MappingOptions,
    strategy: SubjectStrategy,
    writes: SchemaCache<WriteEntry>,
    reads: Lru<u32, Arc<ReadPlan>>,
}

impl fmt::Debug for AvroConverter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AvroConverter")
            .field("is_key", &self.is_key)
            .field("auto_register", &self.auto_register)
            .field("strategy", &self.strategy)
            .finish_non_exhaustive()
    }
}

impl Default for AvroConverter {
    fn default() -> Self {
        Self::build(None)
    }
}

impl AvroConverter {
    fn build(client: Option<Arc<dyn SchemaRegistryClient>>) -> Self {
        apache_avro::util::max_allocation_bytes(MAX_AVRO_ALLOCATION);
        AvroConverter {
            injected: client.is_some(),
            client,
            is_key: false,
            auto_register: true,
            options: MappingOptions {
                connect_meta_data: true,
            },
            strategy: SubjectStrategy::Topic,
            writes: SchemaCache::new(1000),
            reads: Lru::new(1000),
        }
    }

    /// A converter using `client` (then `schema.registry.url` is optional).
    pub fn with_client(client: Arc<dyn SchemaRegistryClient>) -> Self {
        Self::build(Some(client))
    }

    /// The keys this converter accepts.
    pub fn definition() -> ConfigDef {
        let strategies = [
            TOPIC_NAME_STRATEGY,
            RECORD_NAME_STRATEGY,
            TOPIC_RECORD_NAME_STRATEGY,
            "TopicNameStrategy",
            "RecordNameStrategy",
            "TopicRecordNameStrategy",
        ];
        ConfigDef::new()
            .define(ConfigKey::new(SCHEMA_REGISTRY_URL, ConfigType::List).optional().importance(Importance::High).doc("Comma-separated list of schema registry URLs (the first is used); mock://<scope> selects an in-memory registry for tests."))
            .define(ConfigKey::new(AUTO_REGISTER_SCHEMAS, ConfigType::Boolean).default(true).importance(Importance::Medium).doc("Register new schemas; when false, a schema must already be registered under the subject."))
            .define(ConfigKey::new(CONNECT_META_DATA, ConfigType::Boolean).default(true).importance(Importance::Low).doc("Write connect.name, connect.version, connect.doc, connect.parameters and connect.default into Avro schemas."))
            .define(ConfigKey::new(SCHEMAS_CACHE_CONFIG, ConfigType::Int).default(1000).importance(Importance::Low).doc("Schemas cached in each direction."))
            .define(ConfigKey::new(BASIC_AUTH_CREDENTIALS_SOURCE, ConfigType::String).default("URL").validator(ValidString::case_insensitive(["URL", "USER_INFO"])).importance(Importance::Medium).doc("Where the registry's basic-auth credentials come from: USER_INFO (basic.auth.user.info) or URL (user:password@ in the URL)."))
            .define(ConfigKey::new(BASIC_AUTH_USER_INFO, ConfigType::Password).optional().importance(Importance::Medium).doc("user:password for the registry when basic.auth.credentials.source=USER_INFO."))
            .define(ConfigKey::new(KEY_SUBJECT_NAME_STRATEGY, ConfigType::String).default(TOPIC_NAME_STRATEGY).validator(ValidString::of(strategies)).importance(Importance::Medium).doc("Subject naming for keys: TopicNameStrategy (<topic>-key), RecordNameStrategy or TopicRecordNameStrategy."))
            .define(ConfigKey::new(VALUE_SUBJECT_NAME_STRATEGY, ConfigType::String).default(TOPIC_NAME_STRATEGY).validator(ValidString::of(strategies)).importance(Importance::Medium).doc("Subject naming for values: TopicNameStrategy (<topic>-value), RecordNameStrategy or TopicRecordNameStrategy."))
            .define(super::converter_type_key())
    }

    fn client(&self) -> Result<&Arc<dyn SchemaRegistryClient>> {
        self.client.as_ref().ok_or_else(|| {
            ConnectError::config(SCHEMA_REGISTRY_URL, "Missing required configuration \"schema.registry.url\" which has no default value.")
        })
    }

    fn subject(&self, topic: &str, plan: &WritePlan) -> Result<String> {
        let suffix = if self.is_key { "key" } else { "value" };
        let record = || {
            plan.record_name.clone().ok_or_else(|| {
                ConnectError::data("RecordNameStrategy needs a named STRUCT schema (the record name is the subject)")
            })
        };
        Ok(match self.strategy {
            SubjectStrategy::Topic => format!("{topic}-{suffix}"),
            SubjectStrategy::Record => record()?,
            SubjectStrategy::TopicRecord => format!("{topic}-{}", record()?),
        })
    }

    fn plan_for(schema: &Schema, options: MappingOptions) -> Result<WriteEntry> {
        let json = mapping::to_avro(schema, options)?;
        let avro = Avro::parse(&json).map_err(|e| {
            ConnectError::data(format!("the Avro schema made for {schema} is invalid: {e}"))
        })?;
        let names: Names = apache_avro::schema::ResolvedSchema::try_from(&avro)
            .map_err(|e| ConnectError::data(format!("Avro schema names do not resolve: {e}")))?
            .get_names()
            .iter()
            .map(|(k, v)| (k.clone(), (*v).clone()))
            .collect();
        let record_name = match &avro {
            Avro::Record(r) => Some(r.name.fullname(None)),
            _ => None,
        };
        Ok(WriteEntry {
            plan: Arc::new(WritePlan {
                avro,
                names,
                text: json.to_string(),
                record_name,
            }),
            ids: Vec::new(),
        })
    }

    fn write(
        &mut self,
        topic: &str,
        schema: &Schema,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let options = self.options;
        let entry = self
            .writes
            .get_or_try_insert(schema, |s| Self::plan_for(s, options))?;
        let known = entry
            .ids
            .iter()
            .find(|(t, _)| &**t == topic)
            .map(|(_, id)| *id);
        let (plan, id) = match known {
            Some(id) => (entry.plan.clone(), id),
            None => {
                let plan = entry.plan.clone();
                let subject = self.subject(topic, &plan)?;
                let client = self.client()?;
                let id = if self.auto_register {
                    client.register(&subject, &plan.text)?
                } else {
                    client.lookup(&subject, &plan.text)?
                };
                let entry = self
                    .writes
                    .get_or_try_insert(schema, |s| Self::plan_for(s, options))?;
                entry.ids.push((Arc::from(topic), id));
                let updated = entry.clone();
                self.writes.update(schema, updated);
                (plan, id)
            }
        };
        wire::write_header(out, id);
        codec::encode(out, &plan.avro, &plan.names, schema, value)
    }

    fn read_plan(&mut self, id: u32) -> Result<Arc<ReadPlan>> {
        if let Some(p) = self.reads.get(&id) {
            return Ok(p.clone());
        }
        let text = self.client()?.schema_by_id(id)?;
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            ConnectError::data(format!("schema {id} from the registry is not JSON: {e}"))
        })?;
        let avro = Avro::parse(&json).map_err(|e| {
            ConnectError::data(format!(
                "schema {id} from the registry is not a valid Avro schema: {e}"
            ))
        })?;
        let connect =
            mapping::to_connect(&json).map_err(|e| e.context(format_args!("schema {id}")))?;
        let plan = Arc::new(ReadPlan { avro, connect });
        self.reads.insert(id, plan.clone());
        Ok(plan)
    }

    fn read(&mut self, bytes: &[u8]) -> Result<SchemaAndValue> {
        let (id, mut datum) = wire::read_header(bytes)?;
        let plan = self.read_plan(id)?;
        let value = apache_avro::from_avro_datum(&plan.avro, &mut datum, None).map_err(|e| {
            ConnectError::data(format!("Avro datum does not match schema {id}: {e}"))
        })?;
        let value = codec::to_connect(&plan.connect, value)?;
        Ok(SchemaAndValue::new(Some(plan.connect.clone()), value))
    }
}

impl Converter for AvroConverter {
    fn configure(&mut self, config: &ConfigMap, is_key: bool) -> Result<()> {
        let parsed = Self::definition().parse(config)?;
        self.is_key = is_key;
        self.auto_register = parsed.get_bool(AUTO_REGISTER_SCHEMAS).unwrap_or(true);
        self.options = MappingOptions {
            connect_meta_data: parsed.get_bool(CONNECT_META_DATA).unwrap_or(true),
        };
        let size =
            usize::try_from(parsed.get_int(SCHEMAS_CACHE_CONFIG).unwrap_or(1000)).unwrap_or(0);
        self.writes = SchemaCache::new(size);
        self.reads = Lru::new(size);
        let strategy_key = if is_key {
            KEY_SUBJECT_NAME_STRATEGY
        } else {
            VALUE_SUBJECT_NAME_STRATEGY
        };
        let strategy = parsed
            .get_string(strategy_key)
            .unwrap_or(TOPIC_NAME_STRATEGY);
        self.strategy = match strategy.rsplit('.').next().unwrap_or(strategy) {
            "RecordNameStrategy" => SubjectStrategy::Record,
            "TopicRecordNameStrategy" => SubjectStrategy::TopicRecord,
            _ => SubjectStrategy::Topic,
        };
        if self.injected {
            return Ok(());
        }
        let url = parsed.get_list(SCHEMA_REGISTRY_URL).and_then(|l| l.first()).ok_or_else(|| {
            ConnectError::config(SCHEMA_REGISTRY_URL, "Missing required configuration \"schema.registry.url\" which has no default value.")
        })?;
        if let Some(scope) = url.strip_prefix("mock://") {
            self.client = Some(MemorySchemaRegistry::for_scope(scope));
            return Ok(());
        }
        let user_info = match parsed.get_string(BASIC_AUTH_CREDENTIALS_SOURCE) {
            Some(s) if s.eq_ignore_ascii_case("USER_INFO") => Some(
                parsed
                    .get_password(BASIC_AUTH_USER_INFO)
                    .map(|p| p.value().to_string())
                    .ok_or_else(|| {
                        ConnectError::config(
                            BASIC_AUTH_USER_INFO,
                            "is required when basic.auth.credentials.source=USER_INFO",
                        )
                    })?,
            ),
            _ => None,
        };
        let (url, user_info) = match (user_info, url.split_once("://")) {
            (None, Some((scheme, rest))) if rest.contains('@') => {
                let (creds, host) = rest.split_once('@').unwrap_or(("", rest));
                (format!("{scheme}://{host}"), Some(creds.to_string()))
            }
            (u, _) => (url.clone(), u),
        };
        self.client = Some(Arc::new(HttpSchemaRegistry::new(
            &url,
            user_info.as_deref(),
        )?));
        Ok(())
    }

    fn config_def(&self) -> ConfigDef {
        Self::definition()
    }

    fn from_connect_data(
        &mut self,
        topic: &str,
        _headers: &Headers,
        schema: Option<&Schema>,
        value: &Value,
        out: &mut Vec<u8>,
    ) -> Result<Serialized> {
        let Some(schema) = schema else {
            if value.is_null() {
                return Ok(Serialized::Null);
            }
            return Err(ConnectError::data(format!(
                "AvroConverter cannot write a schemaless {} for topic '{topic}': Avro needs a Connect schema",
                value.type_name()
            )));
        };
        if value.is_null() && schema.default_value().is_none_or(Value::is_null) {
            if schema.is_optional() {
                return Ok(Serialized::Null);
            }
            return Err(ConnectError::data(format!(
                "AvroConverter: null value for required schema {schema} (topic '{topic}')"
            )));
        }
        let start = out.len();
        self.write(topic, schema, value, out).map_err(|e| {
            out.truncate(start);
            e.context(format_args!(
                "AvroConverter cannot write a record for topic '{topic}'"
            ))
        })?;
        Ok(Serialized::Bytes)
    }

    fn to_connect_data(
        &mut self,
        topic: &str,
        _headers: &Headers,
        bytes: Option<&[u8]>,
    ) -> Result<SchemaAndValue> {
        let Some(bytes) = bytes else {
            return Ok(SchemaAndValue::NULL);
        };
        self.read(bytes).map_err(|e| {
            e.context(format_args!(
                "AvroConverter cannot read a record from topic '{topic}'"
            ))
        })
    }
}
