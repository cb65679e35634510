//! `connect-smt`: run a Kafka Connect transform chain over JSON lines, to try
//! a `transforms.*` config on sample data without Kafka.
//!
//! ```text
//! connect-smt --config chain.properties < in.jsonl > out.jsonl
//! ```
//!
//! Each input line is one sink record:
//! `{"topic":"t","partition":0,"offset":5,"timestamp":1700000000000,"key":K,"value":V,"headers":[{"key":"h","value":H}]}`
//! where K, V and H are `null` or a JsonConverter envelope
//! `{"schema":S,"payload":P}` (S may be null for schemaless data).
//! Every record that survives the chain is written in the same shape, keys in
//! the order topic, partition, offset, timestamp, key, value, headers.
//!
//! Exit codes: 0 success; 1 a record failed with `errors.tolerance=none`
//! (the default); 2 bad arguments or configuration.

use std::io::{self, BufRead, BufWriter, Write};
use std::process::ExitCode;

use connect_api::config::ConfigMap;
use connect_api::{Converter, Header, Headers, Record, SinkRecord, TimestampType};
use connect_runtime::converters::JsonConverter;
use connect_runtime::properties::parse_properties;
use connect_transforms::chain::TransformChain;
use connect_transforms::registry::TransformRegistry;

const USAGE: &str = "usage: connect-smt --config <chain.properties> < in.jsonl > out.jsonl

Runs the transforms.* / predicates.* chain of the properties file over one
sink record per input line and writes the records that survive it.
errors.tolerance=none (default) stops at the first failing record with exit
code 1; errors.tolerance=all reports it on stderr and goes on.";

fn main() -> ExitCode {
    let path = match parse_args(std::env::args().skip(1)) {
        Ok(Some(p)) => p,
        Ok(None) => {
            eprintln!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("connect-smt: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut tool = match std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read config file {path}: {e}"))
        .and_then(|text| Tool::new(&parse_properties(&text)))
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("connect-smt: {e}");
            return ExitCode::from(2);
        }
    };
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let code = tool.run(stdin.lock(), &mut out, &mut io::stderr());
    if let Err(e) = out.flush() {
        eprintln!("connect-smt: cannot write output: {e}");
        return ExitCode::from(1);
    }
    code
}

/// The config file path from `--config <path>` or `--config=<path>`;
/// `None` for `--help`.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<String>, String> {
    let mut config = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "--config" | "-c" => {
                config = Some(args.next().ok_or("--config needs a file path")?);
            }
            other => match other.strip_prefix("--config=") {
                Some(p) => config = Some(p.to_string()),
                None => return Err(format!("unknown argument '{other}'")),
            },
        }
    }
    config
        .map(Some)
        .ok_or_else(|| "--config is required".to_string())
}

pub(crate) struct Tool {
    chain: TransformChain<SinkRecord>,
    tolerate_all: bool,
    key: JsonConverter,
    value: JsonConverter,
    header: JsonConverter,
}

/// Why a line produced no output: the reason, for the error message.
type LineError = String;

impl Tool {
    pub(crate) fn new(props: &ConfigMap) -> Result<Tool, String> {
        let tolerate_all = match props.get("errors.tolerance").map(|s| s.trim()) {
            None | Some("none") => false,
            Some("all") => true,
            Some(other) => {
                return Err(format!(
                    "Invalid value {other} for configuration errors.tolerance: String must be one of: none, all"
                ))
            }
        };
        let chain = TransformChain::from_config(props, &TransformRegistry::with_builtins())
            .map_err(|e| e.to_string())?;
        let mut key = JsonConverter::new();
        let mut value = JsonConverter::new();
        let mut header = JsonConverter::new();
        let none = ConfigMap::new();
        key.configure(&none, true).map_err(|e| e.to_string())?;
        value.configure(&none, false).map_err(|e| e.to_string())?;
        header.configure(&none, false).map_err(|e| e.to_string())?;
        Ok(Tool {
            chain,
            tolerate_all,
            key,
            value,
            header,
        })
    }

    pub(crate) fn run(
        &mut self,
        mut input: impl BufRead,
        out: &mut impl Write,
        err: &mut impl Write,
    ) -> ExitCode {
        let mut line = Vec::new();
        let mut out_buf = Vec::new();
        let mut line_no = 0u64;
        loop {
            line.clear();
            match input.read_until(b'\n', &mut line) {
                Ok(0) => return ExitCode::SUCCESS,
                Ok(_) => {}
                Err(e) => {
                    let _ = writeln!(
                        err,
                        "connect-smt: cannot read input after line {line_no}: {e}"
                    );
                    return ExitCode::from(1);
                }
            }
            line_no += 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            out_buf.clear();
            match self.process(&line, &mut out_buf) {
                Ok(()) => {
                    if let Err(e) = out.write_all(&out_buf) {
                        let _ = writeln!(err, "connect-smt: cannot write output: {e}");
                        return ExitCode::from(1);
                    }
                }
                Err(reason) if self.tolerate_all => {
                    let _ = writeln!(err, "connect-smt: line {line_no}: skipped: {reason}");
                }
                Err(reason) => {
                    let _ = writeln!(err, "connect-smt: line {line_no}: {reason}");
                    return ExitCode::from(1);
                }
            }
        }
    }

    /// One input line to zero or one output line in `out`.
    fn process(&mut self, line: &[u8], out: &mut Vec<u8>) -> Result<(), LineError> {
        let record = self.read_record(line)?;
        let Some(record) = self.chain.apply(record).map_err(|e| e.to_string())? else {
            return Ok(());
        };
        self.write_record(&record, out)
    }

    fn read_record(&mut self, line: &[u8]) -> Result<SinkRecord, LineError> {
        let json: serde_json::Value =
            serde_json::from_slice(line).map_err(|e| format!("malformed input: not JSON: {e}"))?;
        let serde_json::Value::Object(mut obj) = json else {
            return Err("malformed input: a record must be a JSON object".into());
        };
        for k in obj.keys() {
            if ![
                "topic",
                "partition",
                "offset",
                "timestamp",
                "key",
                "value",
                "headers",
            ]
            .contains(&k.as_str())
            {
                return Err(format!("malformed input: unknown field '{k}'"));
            }
        }
        let topic = match obj.remove("topic") {
            Some(serde_json::Value::String(t)) => t,
            _ => return Err("malformed input: 'topic' must be a string".into()),
        };
        let int = |v: Option<serde_json::Value>, name: &str| -> Result<Option<i64>, LineError> {
            match v {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::Number(n)) => n
                    .as_i64()
                    .map(Some)
                    .ok_or_else(|| format!("malformed input: '{name}' must be an integer")),
                Some(_) => Err(format!("malformed input: '{name}' must be an integer")),
            }
        };
        let partition = int(obj.remove("partition"), "partition")?
            .map(|p| {
                i32::try_from(p)
                    .map_err(|_| "malformed input: 'partition' is out of range".to_string())
            })
            .transpose()?;
        let offset = int(obj.remove("offset"), "offset")?.unwrap_or(0);
        let timestamp = int(obj.remove("timestamp"), "timestamp")?;

        let mut headers = Headers::new();
        match obj.remove("headers") {
            None | Some(serde_json::Value::Null) => {}
            Some(serde_json::Value::Array(items)) => {
                for (i, h) in items.into_iter().enumerate() {
                    let serde_json::Value::Object(mut h) = h else {
                        return Err(format!("malformed input: headers[{i}] must be an object"));
                    };
                    let key = match h.remove("key") {
                        Some(serde_json::Value::String(k)) => k,
                        _ => {
                            return Err(format!(
                                "malformed input: headers[{i}].key must be a string"
                            ))
                        }
                    };
                    let sv = decode(&mut self.header, &topic, &Headers::new(), h.remove("value"))
                        .map_err(|e| format!("header '{key}': {e}"))?;
                    headers.push(Header::new(key, sv.schema, sv.value));
                }
            }
            Some(_) => return Err("malformed input: 'headers' must be an array".into()),
        }
        let key = decode(&mut self.key, &topic, &headers, obj.remove("key"))
            .map_err(|e| format!("key: {e}"))?;
        let value = decode(&mut self.value, &topic, &headers, obj.remove("value"))
            .map_err(|e| format!("value: {e}"))?;

        let mut data = Record::new(topic, value.schema, value.value)
            .with_key(key.schema, key.value)
            .with_headers(headers);
        data.timestamp = timestamp;
        let mut record = SinkRecord::new(data, partition.unwrap_or(0), offset);
        record.record.kafka_partition = partition;
        if timestamp.is_some() {
            record.timestamp_type = TimestampType::CreateTime;
        }
        Ok(record)
    }

    fn write_record(&mut self, record: &SinkRecord, out: &mut Vec<u8>) -> Result<(), LineError> {
        let r = &record.record;
        let topic = &*r.topic;
        out.extend_from_slice(b"{\"topic\":");
        serde_json::to_writer(&mut *out, topic).map_err(|e| e.to_string())?;
        out.extend_from_slice(b",\"partition\":");
        write_opt(out, r.kafka_partition.map(i64::from));
        out.extend_from_slice(b",\"offset\":");
        out.extend_from_slice(record.kafka_offset.to_string().as_bytes());
        out.extend_from_slice(b",\"timestamp\":");
        write_opt(out, r.timestamp);
        out.extend_from_slice(b",\"key\":");
        encode(
            &mut self.key,
            topic,
            &r.headers,
            r.key_schema.as_ref(),
            &r.key,
            out,
        )
        .map_err(|e| format!("key: {e}"))?;
        out.extend_from_slice(b",\"value\":");
        encode(
            &mut self.value,
            topic,
            &r.headers,
            r.value_schema.as_ref(),
            &r.value,
            out,
        )
        .map_err(|e| format!("value: {e}"))?;
        out.extend_from_slice(b",\"headers\":[");
        for (i, h) in r.headers.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"key\":");
            serde_json::to_writer(&mut *out, h.key()).map_err(|e| e.to_string())?;
            out.extend_from_slice(b",\"value\":");
            encode(
                &mut self.header,
                topic,
                &Headers::new(),
                h.schema(),
                h.value(),
                out,
            )
            .map_err(|e| format!("header '{}': {e}", h.key()))?;
            out.push(b'}');
        }
        out.extend_from_slice(b"]}\n");
        Ok(())
    }
}

fn write_opt(out: &mut Vec<u8>, v: Option<i64>) {
    match v {
        Some(v) => out.extend_from_slice(v.to_string().as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
}

/// A JSON envelope (or null / absent) through the JsonConverter.
fn decode(
    conv: &mut JsonConverter,
    topic: &str,
    headers: &Headers,
    json: Option<serde_json::Value>,
) -> Result<connect_api::SchemaAndValue, String> {
    let bytes = match json {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => Some(serde_json::to_vec(&v).map_err(|e| e.to_string())?),
    };
    conv.to_connect_data(topic, headers, bytes.as_deref())
        .map_err(|e| e.to_string())
}

/// Schema and value as a JsonConverter envelope (or `null`) appended to `out`.
fn encode(
    conv: &mut JsonConverter,
    topic: &str,
    headers: &Headers,
    schema: Option<&connect_api::Schema>,
    value: &connect_api::Value,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let start = out.len();
    let written = conv
        .from_connect_data(topic, headers, schema, value, out)
        .map_err(|e| e.to_string())?;
    if written.is_null() {
        out.truncate(start);
        out.extend_from_slice(b"null");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let args = |a: &[&str]| parse_args(a.iter().map(|s| s.to_string()));
        assert_eq!(args(&["--config", "x"]).unwrap().as_deref(), Some("x"));
        assert_eq!(args(&["--config=y"]).unwrap().as_deref(), Some("y"));
        assert_eq!(args(&["--help"]).unwrap(), None);
        assert!(args(&[]).is_err());
        assert!(args(&["--config"]).is_err());
        assert!(args(&["--bogus"]).is_err());
    }
}
