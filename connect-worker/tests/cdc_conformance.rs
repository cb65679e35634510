//! connect-postgres judged event by event against Debezium 3.6.1's
//! PostgreSQL connector (issue 29, item 6): both capture the same table of
//! the same real PostgreSQL onto the same real broker, Debezium on Kafka
//! Connect 4.3.1's Java standalone worker (`tools/debezium-java`), ours on
//! `connect-standalone`; the same DDL and DML run under both, and every
//! change event is compared field by field: topic order, keys, values,
//! schemas and header names.
//!
//! Only what must differ is ignored: the prefix each connector was given
//! (it names the topics, schemas and `source.name`), `source.version`, the
//! processing times (`ts_ms`, `ts_us`, `ts_ns` of the envelope), the run id
//! header's value, and for snapshot events the snapshot's own time,
//! transaction and LSN (each connector takes its own snapshot). Every other
//! difference fails the test, unless listed in [`KNOWN`] with the reason
//! the connector's README gives.
//!
//! Skips loudly (`SKIPPED`) without the real PostgreSQL and broker; without
//! Java or Maven too, unless `CONFORMANCE_REQUIRE_JAVA=1` (CI).

mod common;
mod databases;

use std::path::{Path, PathBuf};

use common::{spawn_java_main, unique_suffix, Standalone};
use serde_json::Value as Json;

/// One test's Java worker at a time: the JVMs start slowly on a loaded
/// 2-core machine, and the tests' reads wait at most a minute.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Differences known and documented in connectors/postgres/README.md
/// ("Where this connector differs from Debezium"): (path suffix, reason).
const KNOWN: &[(&str, &str)] = &[];

/// What both judge tests need: the real PostgreSQL's URL, the real
/// broker, and `tools/debezium-java` built. `None` after a loud SKIPPED
/// line; without Java under `CONFORMANCE_REQUIRE_JAVA` (CI), a failure.
fn prerequisites(test: &str) -> Option<(String, String, PathBuf)> {
    let (Some(pg), Some(bootstrap)) = (
        connect_test_support::real_database("JDBC_TEST_POSTGRES_URL", test),
        connect_test_support::real_bootstrap(test),
    ) else {
        return None;
    };
    let dir = common::repo_file("tools/debezium-java");
    let built = [
        dir.join("target/plugins/debezium-connector-postgres"),
        dir.join("target/lib"),
    ];
    match common::maven_project(&dir, &built, &[dir.join("pom.xml")]) {
        Ok(project) => Some((pg, bootstrap, project)),
        Err(why) => {
            assert!(
                std::env::var_os("CONFORMANCE_REQUIRE_JAVA").is_none(),
                "CONFORMANCE_REQUIRE_JAVA is set but Debezium cannot run: {why}"
            );
            eprintln!(
                "SKIPPED {test}: Debezium 3.6.1 on Kafka Connect 4.3.1 is not available: {why}"
            );
            None
        }
    }
}

/// The Java worker, killed on drop.
struct Java(std::process::Child);

impl Drop for Java {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Debezium's worker: Kafka Connect 4.3.1's standalone worker from
/// `project` on `bootstrap`, REST on `port`, offsets in `dir/<offsets>`,
/// running the connector files given (none: create them over REST).
fn start_debezium(
    project: &Path,
    dir: &Path,
    bootstrap: &str,
    port: u16,
    offsets: &str,
    connectors: &[&Path],
) -> Java {
    let props = dir.join(format!("java-{port}.properties"));
    std::fs::write(
        &props,
        format!(
            "bootstrap.servers={bootstrap}\n\
             key.converter=org.apache.kafka.connect.json.JsonConverter\n\
             value.converter=org.apache.kafka.connect.json.JsonConverter\n\
             key.converter.schemas.enable=true\nvalue.converter.schemas.enable=true\n\
             offset.storage.file.filename={}\noffset.flush.interval.ms=500\n\
             listeners=http://127.0.0.1:{port}\nplugin.path={}\n",
            dir.join(offsets).display(),
            project.join("target/plugins").display()
        ),
    )
    .unwrap();
    let logs = dir.join(format!("java-logs-{port}"));
    std::fs::create_dir_all(&logs).unwrap();
    let mut args: Vec<&Path> = vec![&props];
    args.extend_from_slice(connectors);
    Java(spawn_java_main(
        &format!("{}/*", project.join("target/lib").display()),
        &project.join("log4j2.properties"),
        "org.apache.kafka.connect.cli.ConnectStandalone",
        &args,
        &logs,
    ))
}

/// `host`, `port` and `db` of a `jdbc:postgresql://host:port/db` URL.
fn pg_parts(url: &str) -> (String, String, String) {
    let rest = url.trim_start_matches("jdbc:postgresql://");
    let (hostport, db) = rest.split_once('/').expect("host:port/db");
    let (host, port) = hostport.split_once(':').expect("host:port");
    (host.into(), port.into(), db.into())
}

/// The connector config both connectors get, but for name, prefix and
/// slot.
fn connector_properties(pg: &str, table: &str, prefix: &str) -> String {
    let (host, port, db) = pg_parts(pg);
    format!(
        "name={prefix}\n\
         connector.class=io.debezium.connector.postgresql.PostgresConnector\n\
         database.hostname={host}\ndatabase.port={port}\ndatabase.user=postgres\n\
         database.password=unused\ndatabase.dbname={db}\n\
         topic.prefix={prefix}\nplugin.name=pgoutput\nslot.name={prefix}\n\
         publication.name={prefix}\npublication.autocreate.mode=filtered\n\
         table.include.list=public.{table}\n"
    )
}

/// The table and what is done to it: about thirty column types, NULLs,
/// updates of a column and of the key, deletes, a transaction, an
/// unchanged TOASTed value, REPLICA IDENTITY FULL, a column added.
fn ddl(table: &str) -> String {
    format!(
        "DROP TABLE IF EXISTS {table}; DROP TYPE IF EXISTS {table}_mood; \
         CREATE TYPE {table}_mood AS ENUM ('sad', 'ok', 'happy'); \
         CREATE TABLE {table} (id SERIAL PRIMARY KEY, i2 INT2, i4 INT4 NOT NULL DEFAULT 7, i8 INT8, \
           n NUMERIC(10,2), nv NUMERIC, m MONEY, f4 FLOAT4, f8 FLOAT8, t TEXT, vc VARCHAR(10), \
           ch CHAR(3), b BYTEA, bo BOOL, d DATE, tm TIME, tm3 TIME(3), ttz TIMETZ, ts TIMESTAMP, \
           ts3 TIMESTAMP(3), tstz TIMESTAMPTZ, iv INTERVAL, u UUID, j JSON, jb JSONB, ia INT[], \
           ta TEXT[], e {table}_mood, ip INET, net CIDR, mac MACADDR, p POINT, bit1 BIT(1), \
           bits BIT(3), vb VARBIT, x XML, h HSTORE, big TEXT); \
         INSERT INTO {table} (i2, i4, i8, n, nv, m, f4, f8, t, vc, ch, b, bo, d, tm, tm3, ttz, ts, ts3, \
           tstz, iv, u, j, jb, ia, ta, e, ip, net, mac, p, bit1, bits, vb, x, h, big) VALUES \
           (-32768, 2147483647, 9223372036854775807, 12345678.91, 3.14159, 12.5, 1.5, -2.25, 'text', \
            'varchar', 'ab', '\\x00ff10', true, '2024-02-29', '13:45:30.123456', '13:45:30.123', \
            '13:45:30.5+02', '2024-02-29 13:45:30.123456', '2024-02-29 13:45:30.123', \
            '2024-02-29 13:45:30.5+02', '1 year 2 mons 3 days 04:05:06.789', \
            'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{{\"a\": 1}}', '{{\"b\": [1, 2]}}', '{{1,2,NULL}}', \
            '{{\"x y\",z}}', 'happy', '192.168.0.1', '10.0.0.0/8', '08:00:2b:01:02:03', '(1.5,2.5)', \
            B'1', B'101', B'10011', '<a>1</a>', '\"k\"=>\"v\"', 'small'), \
           (NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
            NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
            NULL, NULL, NULL, NULL, NULL, NULL)"
    )
}

fn dml(table: &str) -> Vec<String> {
    vec![
        format!("UPDATE {table} SET t = 'changed', n = 0.5 WHERE id = 1"),
        format!("INSERT INTO {table} (i4, t, big) VALUES (3, 'third', repeat('x', 10000))"),
        // The TOASTed `big` is unchanged: DEFAULT identity does not send it.
        format!("UPDATE {table} SET t = 'toast kept' WHERE id = 3"),
        format!("UPDATE {table} SET id = 100 WHERE id = 2"),
        format!(
            "BEGIN; INSERT INTO {table} (i4, t) VALUES (4, 'in tx'); \
             UPDATE {table} SET i8 = 42 WHERE id = 1; DELETE FROM {table} WHERE id = 100; COMMIT"
        ),
        format!("ALTER TABLE {table} REPLICA IDENTITY FULL"),
        format!("UPDATE {table} SET vc = 'full' WHERE id = 1"),
        format!("DELETE FROM {table} WHERE id = 3"),
        format!("ALTER TABLE {table} ADD COLUMN added INT DEFAULT 5"),
        format!("INSERT INTO {table} (i4, t, added) VALUES (6, 'after alter', 6)"),
        format!("TRUNCATE {table}"),
        format!("INSERT INTO {table} (i4, t) VALUES (7, 'after truncate')"),
    ]
}

/// One record as compared: topic-relative position, key, value, header
/// names (and values but the run id's), all as JSON with the prefix
/// replaced.
fn normalize(record: &connect_runtime::kafka::ConsumedRecord, prefix: &str) -> Json {
    let parse = |b: &Option<connect_api::bytes::Bytes>| match b {
        None => Json::Null,
        Some(b) => serde_json::from_slice(b)
            .unwrap_or_else(|_| Json::String(String::from_utf8_lossy(b).into())),
    };
    let mut key = parse(&record.key);
    let mut value = parse(&record.value);
    let headers: Vec<Json> = record
        .headers
        .iter()
        .map(|(k, v)| {
            let v = if k == "__debezium.context.runId" {
                Json::String("RUN".into())
            } else {
                parse(v)
            };
            serde_json::json!([k, v])
        })
        .collect();
    let mut headers = Json::Array(headers);
    for j in [&mut key, &mut value, &mut headers] {
        replace_prefix(j, prefix);
    }
    if let Some(payload) = value.get_mut("payload").and_then(Json::as_object_mut) {
        for k in ["ts_ms", "ts_us", "ts_ns"] {
            payload.remove(k);
        }
        let snapshot = payload.get("op").and_then(Json::as_str) == Some("r");
        if let Some(source) = payload.get_mut("source").and_then(Json::as_object_mut) {
            source.remove("version");
            if snapshot {
                for k in ["ts_ms", "ts_us", "ts_ns", "txId", "lsn", "sequence"] {
                    source.remove(k);
                }
            }
        }
    }
    serde_json::json!({"key": key, "value": value, "headers": headers})
}

/// Every string equal to `prefix` or starting with `prefix.` gets
/// `PREFIX` instead (topic-derived schema names, source.name, header).
fn replace_prefix(j: &mut Json, prefix: &str) {
    match j {
        Json::String(s) => {
            if s == prefix {
                *s = "PREFIX".into();
            } else if let Some(rest) = s.strip_prefix(&format!("{prefix}.")) {
                *s = format!("PREFIX.{rest}");
            }
        }
        Json::Array(a) => a.iter_mut().for_each(|v| replace_prefix(v, prefix)),
        Json::Object(o) => o.values_mut().for_each(|v| replace_prefix(v, prefix)),
        _ => {}
    }
}

/// The paths where `a` and `b` differ, with both values.
fn differences(path: &str, a: &Json, b: &Json, out: &mut Vec<String>) {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let null = Json::Null;
                differences(
                    &format!("{path}.{k}"),
                    x.get(k).unwrap_or(&null),
                    y.get(k).unwrap_or(&null),
                    out,
                );
            }
        }
        (Json::Array(x), Json::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                differences(&format!("{path}[{i}]"), p, q, out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{path}: debezium {a} ours {b}")),
    }
}

fn known(difference: &str) -> bool {
    KNOWN.iter().any(|(path, _)| difference.contains(path))
}

#[test]
fn every_change_event_matches_debeziums_field_by_field() {
    judge(
        "every_change_event_matches_debeziums_field_by_field",
        "",
        false,
    );
}

/// The same with transaction metadata (BEGIN/END records and each event's
/// `transaction` block) and truncate events (`skipped.operations=none`).
#[test]
fn transaction_metadata_and_truncates_match_debeziums() {
    judge(
        "transaction_metadata_and_truncates_match_debeziums",
        "provide.transaction.metadata=true\nskipped.operations=none\n",
        true,
    );
}

/// The same with the other representations: decimals as strings,
/// Connect's own time types, bytes as base64, no tombstones, and a column
/// left out.
#[test]
fn other_representation_modes_match_debeziums() {
    judge(
        "other_representation_modes_match_debeziums",
        "decimal.handling.mode=string\ntime.precision.mode=connect\n\
         binary.handling.mode=base64\ntombstones.on.delete=false\n\
         column.exclude.list=public\\.conf.*\\.big\n",
        false,
    );
}

/// Runs both connectors with the shared config plus `extra` over [`ddl`]
/// and [`dml`], and fails on any difference that is not [`KNOWN`];
/// `transactions` compares the transaction topics too.
fn judge(test: &str, extra: &str, transactions: bool) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((pg, bootstrap, project)) = prerequisites(test) else {
        return;
    };
    let pg_url = pg.replace("jdbc:postgresql://", "postgres://postgres@");
    let suffix = unique_suffix("").replace('-', "");
    let table = format!("conf{suffix}");
    let (theirs, ours) = (format!("dbzj{suffix}"), format!("dbzr{suffix}"));
    // hstore is an extension (in Debian's postgresql package); two
    // tests may create it at once: retried.
    databases::exec_until_done(&pg_url, "CREATE EXTENSION IF NOT EXISTS hstore");
    databases::exec(&pg_url, &ddl(&table));

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Debezium on Kafka Connect 4.3.1's standalone worker.
    let java_connector = d.join("debezium.properties");
    std::fs::write(
        &java_connector,
        connector_properties(&pg, &table, &theirs) + extra,
    )
    .unwrap();
    let java = start_debezium(
        &project,
        d,
        &bootstrap,
        common::free_port(),
        "java.offsets",
        &[&java_connector],
    );
    // Ours on connect-standalone.
    let ours_dir = d.join("ours");
    std::fs::create_dir_all(&ours_dir).unwrap();
    let props = common::worker_config(&ours_dir, Some(&bootstrap));
    let our_connector = ours_dir.join("ours.properties");
    std::fs::write(
        &our_connector,
        connector_properties(&pg, &table, &ours) + extra,
    )
    .unwrap();
    let worker = Standalone::start(&ours_dir, &props, &[&our_connector]);

    // Both snapshots (two rows each) before any change.
    for prefix in [&theirs, &ours] {
        let mut n = 0;
        let topic = format!("{prefix}.public.{table}");
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            common::topic_records_until(&bootstrap, &topic, "the two snapshot events", |r| {
                n += r.len();
                n >= 2
            })
        }));
        if read.is_err() {
            let log = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
            let ours_log = log(&ours_dir.join("worker.log"));
            let tail: Vec<&str> = ours_log.lines().rev().take(20).collect();
            panic!(
                "no snapshot on {topic}; the end of our worker's log:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
    }
    for statement in dml(&table) {
        databases::exec(&pg_url, &statement);
    }
    // Ours to its end (the last insert, then that transaction's END),
    // then as many of Debezium's.
    let table_topic = format!("public.{table}");
    let mut compared: Vec<(String, String)> =
        vec![(table_topic.clone(), "\"after truncate\"".to_string())];
    let mut report = Vec::new();
    let mut unknown = 0;
    let mut counted = 0;
    let mut i = 0;
    while i < compared.len() {
        let (topic, marker) = compared[i].clone();
        i += 1;
        let mut our_records = Vec::new();
        common::topic_records_until(&bootstrap, &format!("{ours}.{topic}"), &marker, |r| {
            our_records.extend(r.iter().cloned());
            r.iter().any(|x| {
                x.value
                    .as_ref()
                    .is_some_and(|v| String::from_utf8_lossy(v).contains(&marker))
            })
        });
        if transactions && topic == table_topic {
            // The last event's transaction ends the transaction topic.
            let last: Json = our_records
                .iter()
                .rev()
                .find_map(|r| serde_json::from_slice(r.value.as_ref()?).ok())
                .unwrap_or(Json::Null);
            let tx = last["payload"]["source"]["txId"].as_i64().unwrap_or(-1);
            compared.push(("transaction".into(), format!("\"id\":\"{tx}:")));
        }
        let mut their_records = Vec::new();
        let want = our_records.len();
        let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            common::topic_records_until(
                &bootstrap,
                &format!("{theirs}.{topic}"),
                &format!("{want} records"),
                |r| {
                    their_records.extend(r.iter().cloned());
                    their_records.len() >= want
                },
            )
        }));
        if got.is_err() || their_records.len() != our_records.len() {
            unknown += 1;
            report.push(format!(
                "{topic}: Debezium wrote {} records, ours {}",
                their_records.len(),
                our_records.len()
            ));
        }
        counted += our_records.len();
        for (n, (t, o)) in their_records.iter().zip(&our_records).enumerate() {
            let (t, o) = (normalize(t, &theirs), normalize(o, &ours));
            let mut diffs = Vec::new();
            differences(&format!("{topic}#{n}"), &t, &o, &mut diffs);
            for d in diffs {
                if !known(&d) {
                    unknown += 1;
                }
                report.push(d);
            }
        }
    }
    drop(worker);
    drop(java);
    std::fs::write(
        common::repo_file(&format!("target/{test}.txt")),
        report.join("\n"),
    )
    .ok();
    for line in report.iter().take(80) {
        eprintln!("{test}: {line}");
    }
    eprintln!(
        "{test}: {counted} records compared, {} differences ({unknown} not known); full report in target/{test}.txt",
        report.len()
    );
    for slot in [&theirs, &ours] {
        databases::exec_until_done(
            &pg_url,
            &format!("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '{slot}'"),
        );
    }
    assert_eq!(unknown, 0, "differences from Debezium (see above)");
}

/// The connector config as the REST body's `config` object.
fn config_json(properties: &str) -> Json {
    let map: serde_json::Map<String, Json> = properties
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), Json::String(v.to_string())))
        .collect();
    Json::Object(map)
}

/// `op:id` of each change event on `topic`, read until `done` holds.
fn ops_on_topic(
    bootstrap: &str,
    topic: &str,
    what: &str,
    mut done: impl FnMut(&[String]) -> bool,
) -> Vec<String> {
    let mut ops = Vec::new();
    common::topic_records_until(bootstrap, topic, what, |records| {
        for r in records {
            let Some(v) = &r.value else { continue };
            let v: Json = serde_json::from_slice(v).unwrap_or(Json::Null);
            let p = &v["payload"];
            let id = p["after"]["id"]
                .as_i64()
                .or(p["before"]["id"].as_i64())
                .unwrap_or(-1);
            ops.push(format!("{}:{id}", p["op"].as_str().unwrap_or("?")));
        }
        done(&ops)
    });
    ops
}

/// The stored offset of `connector` on the worker at `base`, once it has
/// streamed past `lsn` (`lsn_proc` at or beyond it).
fn offsets_past(base: &str, connector: &str, lsn: i64) -> Json {
    common::wait_for(
        &format!("{connector}'s offsets past LSN {lsn} on {base}"),
        || {
            let (status, body) =
                common::try_curl(base, "GET", &format!("/connectors/{connector}/offsets"), "")
                    .ok()?;
            let offset = body["offsets"].as_array()?.first()?.clone();
            let proc = offset["offset"]["lsn_proc"].as_i64()?;
            (status == 200 && proc >= lsn).then_some(body)
        },
    )
}

/// The `source.lsn` of the last change event on `topic` for row `id`.
fn event_lsn(bootstrap: &str, topic: &str, op_id: &str) -> i64 {
    let mut lsn = None;
    common::topic_records_until(bootstrap, topic, op_id, |records| {
        for r in records {
            let Some(v) = &r.value else { continue };
            let v: Json = serde_json::from_slice(v).unwrap_or(Json::Null);
            let p = &v["payload"];
            let id = p["after"]["id"]
                .as_i64()
                .or(p["before"]["id"].as_i64())
                .unwrap_or(-1);
            if format!("{}:{id}", p["op"].as_str().unwrap_or("?")) == op_id {
                lsn = p["source"]["lsn"].as_i64();
            }
        }
        lsn.is_some()
    });
    lsn.unwrap_or_default()
}

/// Creates `connector` STOPPED on the worker at `base`, gives it
/// `offsets` (as another worker's GET answered them) and resumes it.
fn take_over(base: &str, connector: &str, config: &Json, offsets: &Json) {
    common::wait_for(&format!("the REST API at {base}"), || {
        common::try_curl(base, "GET", "/", "")
            .ok()
            .filter(|(s, _)| *s == 200)
    });
    let body = serde_json::json!({"name": connector, "config": config, "initial_state": "STOPPED"});
    let (status, reply) = common::curl(base, "POST", "/connectors", &body.to_string());
    assert_eq!(status, 201, "create {connector} stopped: {reply}");
    let (status, reply) = common::curl(
        base,
        "PATCH",
        &format!("/connectors/{connector}/offsets"),
        &serde_json::json!({"offsets": offsets["offsets"]}).to_string(),
    );
    assert_eq!(status, 200, "PATCH offsets: {reply}");
    let (status, reply) = common::curl(base, "PUT", &format!("/connectors/{connector}/resume"), "");
    assert!(status == 202 || status == 204, "resume: {status} {reply}");
}

/// A connector moves from Debezium to ours and back with its offsets
/// (GET on one worker, PATCH on the other): each change reaches the topic
/// once, with no new snapshot.
#[test]
fn offsets_hand_over_from_debezium_to_ours_and_back() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let test = "offsets_hand_over_from_debezium_to_ours_and_back";
    let Some((pg, bootstrap, project)) = prerequisites(test) else {
        return;
    };
    let pg_url = pg.replace("jdbc:postgresql://", "postgres://postgres@");
    let suffix = unique_suffix("").replace('-', "");
    let table = format!("hand{suffix}");
    let name = format!("hand{suffix}");
    databases::exec(
        &pg_url,
        &format!("CREATE TABLE {table} (id INT PRIMARY KEY, v TEXT); INSERT INTO {table} VALUES (1, 'a'), (2, 'b')"),
    );
    let properties = connector_properties(&pg, &table, &name);
    let config = config_json(&properties);
    let topic = format!("{name}.public.{table}");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 1. Debezium snapshots and streams; its offsets are read over REST.
    let port = common::free_port();
    let connector_file = d.join("debezium.properties");
    std::fs::write(&connector_file, &properties).unwrap();
    let java = start_debezium(
        &project,
        d,
        &bootstrap,
        port,
        "java1.offsets",
        &[&connector_file],
    );
    ops_on_topic(&bootstrap, &topic, "the snapshot", |ops| ops.len() >= 2);
    databases::exec(&pg_url, &format!("INSERT INTO {table} VALUES (3, 'c')"));
    let lsn = event_lsn(&bootstrap, &topic, "c:3");
    let debezium_offsets = offsets_past(&format!("http://127.0.0.1:{port}"), &name, lsn);
    drop(java);
    // Changes while no connector runs: the slot keeps them.
    databases::exec(
        &pg_url,
        &format!("INSERT INTO {table} VALUES (4, 'd'); UPDATE {table} SET v = 'B' WHERE id = 2"),
    );

    // 2. Ours takes over with Debezium's offsets.
    let ours_dir = d.join("ours");
    std::fs::create_dir_all(&ours_dir).unwrap();
    let our_port = common::free_port();
    let props = common::worker_config(&ours_dir, Some(&bootstrap));
    let text = std::fs::read_to_string(&props).unwrap().replace(
        "listeners=http://127.0.0.1:0",
        &format!("listeners=http://127.0.0.1:{our_port}"),
    );
    std::fs::write(&props, text).unwrap();
    let ours = Standalone::start(&ours_dir, &props, &[]);
    let our_base = format!("http://127.0.0.1:{our_port}");
    take_over(&our_base, &name, &config, &debezium_offsets);
    ops_on_topic(&bootstrap, &topic, "u:2 from ours", |ops| {
        ops.iter().any(|o| o == "u:2")
    });
    databases::exec(&pg_url, &format!("INSERT INTO {table} VALUES (5, 'e')"));
    let lsn = event_lsn(&bootstrap, &topic, "c:5");
    let our_offsets = offsets_past(&our_base, &name, lsn);
    drop(ours);
    databases::exec(&pg_url, &format!("DELETE FROM {table} WHERE id = 1"));

    // 3. Debezium takes over again with our offsets.
    let port = common::free_port();
    let java = start_debezium(&project, d, &bootstrap, port, "java2.offsets", &[]);
    take_over(
        &format!("http://127.0.0.1:{port}"),
        &name,
        &config,
        &our_offsets,
    );
    let ops = ops_on_topic(&bootstrap, &topic, "d:1 from Debezium", |ops| {
        ops.iter().any(|o| o == "d:1")
    });
    drop(java);
    // Nothing more comes: read a moment longer than the tombstone.
    assert_eq!(
        ops.iter()
            .filter(|o| !o.starts_with("?"))
            .cloned()
            .collect::<Vec<_>>(),
        ["r:1", "r:2", "c:3", "c:4", "u:2", "c:5", "d:1"],
        "each change once, no second snapshot, across Debezium → ours → Debezium"
    );
    databases::exec_until_done(
        &pg_url,
        &format!("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '{name}'"),
    );
}
