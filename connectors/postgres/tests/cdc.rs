//! The PostgreSQL CDC connector against a real PostgreSQL with
//! `wal_level=logical` (`tools/databases/databases.sh`, started by
//! `.ci/run`; SKIPPED loudly without it).

use std::time::Duration;

use connect_api::{ConfigMap, SourceRecord, Struct, Value};
use connect_postgres::PostgresConnector;
use connect_testkit::SourceHarness;

const DEADLINE: Duration = Duration::from_secs(60);

/// The test database, and a plain connection to change it.
struct Pg {
    host: String,
    port: String,
    db: String,
    admin: sqlx::PgPool,
}

impl Pg {
    async fn connect(test: &str) -> Option<Pg> {
        let url = connect_test_support::real_database("JDBC_TEST_POSTGRES_URL", test)?;
        let rest = url
            .strip_prefix("jdbc:postgresql://")
            .expect("a PostgreSQL JDBC URL");
        let (hostport, db) = rest.split_once('/').expect("host:port/db");
        let (host, port) = hostport.split_once(':').expect("host:port");
        let admin = sqlx::PgPool::connect(&format!("postgres://postgres@{hostport}/{db}"))
            .await
            .expect("connect to the test PostgreSQL");
        Some(Pg {
            host: host.into(),
            port: port.into(),
            db: db.into(),
            admin,
        })
    }

    async fn exec(&self, sql: &str) {
        sqlx::raw_sql(sql)
            .execute(&self.admin)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Drops slot `name` once its last reader has let go of it (the
    /// server notices a closed connection a moment later).
    async fn drop_slot(&self, name: &str) {
        let sql = format!(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '{name}'"
        );
        let deadline = tokio::time::Instant::now() + DEADLINE;
        while let Err(e) = sqlx::raw_sql(&sql).execute(&self.admin).await {
            assert!(tokio::time::Instant::now() < deadline, "{sql}: {e}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn text(&self, sql: &str) -> Option<String> {
        sqlx::query_scalar::<_, Option<String>>(sql)
            .fetch_one(&self.admin)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// A fresh table set and slot for one test: `name` names the table,
    /// slot, publication and topic prefix.
    async fn fresh(&self, name: &str, ddl: &str) {
        self.drop_slot(name).await;
        self.exec(&format!("DROP PUBLICATION IF EXISTS {name}"))
            .await;
        self.exec(&format!("DROP TABLE IF EXISTS {name} CASCADE"))
            .await;
        self.exec(ddl).await;
    }

    fn config(&self, name: &str, extra: &[(&str, &str)]) -> ConfigMap {
        let mut c = ConfigMap::from([
            ("database.hostname", self.host.as_str()),
            ("database.port", self.port.as_str()),
            ("database.user", "postgres"),
            ("database.dbname", self.db.as_str()),
            ("topic.prefix", name),
            ("slot.name", name),
            ("publication.name", name),
            ("publication.autocreate.mode", "filtered"),
            ("poll.interval.ms", "100"),
            ("status.update.interval.ms", "200"),
        ]);
        c.insert("table.include.list".into(), format!("public.{name}"));
        for (k, v) in extra {
            c.insert(k.to_string(), v.to_string());
        }
        c
    }

    async fn confirmed_flush(&self, slot: &str) -> Option<String> {
        self.text(&format!(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '{slot}'"
        ))
        .await
    }
}

fn envelope(r: &SourceRecord) -> &Struct {
    r.record.value.as_struct().expect("an envelope")
}

fn op(r: &SourceRecord) -> String {
    if r.record.value.is_null() {
        return "tombstone".into();
    }
    envelope(r).get("op").unwrap().as_str().unwrap().to_string()
}

fn image<'a>(r: &'a SourceRecord, which: &str) -> Option<&'a Struct> {
    envelope(r).get(which).unwrap().as_struct()
}

fn id(r: &SourceRecord) -> i64 {
    r.record
        .key
        .as_struct()
        .expect("a key struct")
        .get("id")
        .unwrap()
        .as_i64()
        .unwrap()
}

/// `op:id` of each event, for compact assertions.
fn events(records: &[SourceRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| format!("{}:{}", op(r), id(r)))
        .collect()
}

async fn harness() -> SourceHarness {
    SourceHarness::for_connector(PostgresConnector::default())
}

#[tokio::test]
async fn snapshot_hands_over_to_streaming_without_gap_or_duplicate_and_resumes_after_commit() {
    let test = "snapshot_hands_over_to_streaming";
    let Some(pg) = Pg::connect(test).await else {
        return;
    };
    let name = "cdc_handover";
    pg.fresh(
        name,
        &format!(
            "CREATE TABLE {name} (id INT PRIMARY KEY, name TEXT, amount NUMERIC(10,2) NOT NULL); \
                  INSERT INTO {name} VALUES (1, 'a', 1.50), (2, 'b', 2.00), (3, NULL, 3.25)"
        ),
    )
    .await;
    let config = pg.config(name, &[]);
    let mut h = harness().await;
    h.start(config.clone()).await.unwrap();
    // Changes after the task started (after the slot's consistent point
    // and the exported snapshot): streamed once, not in the snapshot.
    pg.exec(&format!(
        "INSERT INTO {name} VALUES (4, 'd', 4.00); UPDATE {name} SET name = 'A' WHERE id = 1"
    ))
    .await;
    let got = h.poll_until(5, DEADLINE).await.unwrap();
    assert_eq!(events(&got), ["r:1", "r:2", "r:3", "c:4", "u:1"]);
    assert_eq!(&*got[0].record.topic, "cdc_handover.public.cdc_handover");
    let snap0 = image(&got[0], "after").unwrap();
    assert_eq!(
        snap0.get("name").unwrap().as_str(),
        Some("a"),
        "the snapshot saw the old row"
    );
    let source = envelope(&got[0])
        .get("source")
        .unwrap()
        .as_struct()
        .unwrap();
    assert_eq!(source.get("snapshot").unwrap().as_str(), Some("first"));
    assert_eq!(
        source.get("connector").unwrap().as_str(),
        Some("postgresql")
    );
    let last_snap = envelope(&got[2])
        .get("source")
        .unwrap()
        .as_struct()
        .unwrap();
    assert_eq!(last_snap.get("snapshot").unwrap().as_str(), Some("last"));
    assert_eq!(
        got[2].source_offset.get("last_snapshot_record"),
        Some(&serde_json::json!(true))
    );
    let update = &got[4];
    assert_eq!(
        image(update, "after")
            .unwrap()
            .get("name")
            .unwrap()
            .as_str(),
        Some("A")
    );
    assert!(
        image(update, "before").is_none(),
        "REPLICA IDENTITY DEFAULT has no before image"
    );
    // No lsn_commit yet: no transaction had committed since the snapshot
    // (Debezium writes it from the first commit on).
    for key in ["lsn", "lsn_proc", "txId", "ts_usec", "messageType"] {
        assert!(
            update.source_offset.contains_key(key),
            "offset {:?} lacks {key}",
            update.source_offset
        );
    }
    let schema = got[0].record.value_schema.as_ref().unwrap();
    assert_eq!(
        schema.name(),
        Some("cdc_handover.public.cdc_handover.Envelope")
    );
    assert_eq!(
        got[0].record.key_schema.as_ref().unwrap().name(),
        Some("cdc_handover.public.cdc_handover.Key")
    );

    // The slot moves only when Kafka has stored the offsets.
    let before_commit = pg.confirmed_flush(name).await;
    h.acknowledge_all().await.unwrap();
    h.commit().await.unwrap();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while pg.confirmed_flush(name).await == before_commit {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the slot never moved after the commit"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A restart resumes after the committed events: only new ones come.
    h.stop().await.unwrap();
    pg.exec(&format!(
        "INSERT INTO {name} VALUES (5, 'e', 5.00); DELETE FROM {name} WHERE id = 2"
    ))
    .await;
    h.start(config).await.unwrap();
    let got = h.poll_until(3, DEADLINE).await.unwrap();
    assert_eq!(events(&got[..2]), ["c:5", "d:2"]);
    assert_eq!(op(&got[2]), "tombstone");
    let deleted = image(&got[1], "before").unwrap();
    assert_eq!(deleted.get("id").unwrap().as_i64(), Some(2));
    assert!(h
        .poll_for(Duration::from_millis(500))
        .await
        .unwrap()
        .is_empty());
    h.stop().await.unwrap();
}

#[tokio::test]
async fn events_not_committed_to_kafka_are_delivered_again_after_a_crash() {
    let test = "events_not_committed_are_delivered_again";
    let Some(pg) = Pg::connect(test).await else {
        return;
    };
    let name = "cdc_redeliver";
    pg.fresh(
        name,
        &format!("CREATE TABLE {name} (id INT PRIMARY KEY, v INT)"),
    )
    .await;
    let config = pg.config(name, &[("snapshot.mode", "no_data")]);
    let mut h = harness().await;
    h.start(config.clone()).await.unwrap();
    // One transaction of three rows, then another of one.
    pg.exec(&format!(
        "BEGIN; INSERT INTO {name} VALUES (1, 1), (2, 2), (3, 3); COMMIT; INSERT INTO {name} VALUES (4, 4)"
    ))
    .await;
    let got = h.poll_until(4, DEADLINE).await.unwrap();
    assert_eq!(events(&got), ["c:1", "c:2", "c:3", "c:4"]);
    // Kafka acknowledged the first two only (mid-transaction), then the
    // worker died.
    h.acknowledge(2).await.unwrap();
    h.commit().await.unwrap();
    h.restart().await.unwrap();
    let got = h.poll_until(2, DEADLINE).await.unwrap();
    assert_eq!(
        events(&got),
        ["c:3", "c:4"],
        "exactly the unacknowledged events, once"
    );
    h.acknowledge_all().await.unwrap();
    h.commit().await.unwrap();
    h.restart().await.unwrap();
    assert!(h
        .poll_for(Duration::from_millis(800))
        .await
        .unwrap()
        .is_empty());
    h.stop().await.unwrap();
}

#[tokio::test]
async fn a_dropped_slot_is_detected_at_start_and_handled_per_snapshot_mode() {
    let test = "a_dropped_slot_is_detected_at_start";
    let Some(pg) = Pg::connect(test).await else {
        return;
    };
    let name = "cdc_lostslot";
    pg.fresh(
        name,
        &format!("CREATE TABLE {name} (id INT PRIMARY KEY); INSERT INTO {name} VALUES (1)"),
    )
    .await;
    let config = pg.config(name, &[]);
    let mut h = harness().await;
    h.start(config.clone()).await.unwrap();
    let got = h.poll_until(1, DEADLINE).await.unwrap();
    assert_eq!(events(&got), ["r:1"]);
    pg.exec(&format!("INSERT INTO {name} VALUES (2)")).await;
    assert_eq!(events(&h.poll_until(1, DEADLINE).await.unwrap()), ["c:2"]);
    h.acknowledge_all().await.unwrap();
    h.commit().await.unwrap();
    h.stop().await.unwrap();
    // The slot disappears while the connector is stopped; a change is
    // made that no slot recorded.
    pg.drop_slot(name).await;
    pg.exec(&format!("INSERT INTO {name} VALUES (3)")).await;
    let err = h.start(config.clone()).await.unwrap_err().to_string();
    assert!(
        err.contains("does not exist") && err.contains("snapshot.mode=when_needed"),
        "{err}"
    );
    // With when_needed, a new snapshot brings every row, the lost one too.
    let mut when_needed = config.clone();
    when_needed.insert("snapshot.mode".into(), "when_needed".into());
    h.start(when_needed).await.unwrap();
    let got = h.poll_until(3, DEADLINE).await.unwrap();
    assert_eq!(events(&got), ["r:1", "r:2", "r:3"]);
    h.stop().await.unwrap();
}

#[tokio::test]
async fn a_quiet_slot_moves_forward_with_heartbeats() {
    let test = "a_quiet_slot_moves_forward_with_heartbeats";
    let Some(pg) = Pg::connect(test).await else {
        return;
    };
    let name = "cdc_heartbeat";
    pg.fresh(name, &format!("CREATE TABLE {name} (id INT PRIMARY KEY)"))
        .await;
    pg.exec("DROP TABLE IF EXISTS cdc_heartbeat_other").await;
    pg.exec("CREATE TABLE cdc_heartbeat_other (id INT)").await;
    let config = pg.config(
        name,
        &[
            ("snapshot.mode", "no_data"),
            ("heartbeat.interval.ms", "100"),
        ],
    );
    let mut h = harness().await;
    h.start(config).await.unwrap();
    let start = pg.confirmed_flush(name).await;
    let wal_before = pg.text("SELECT pg_current_wal_lsn()::text").await;
    // WAL grows with changes to a table the connector does not capture.
    pg.exec("INSERT INTO cdc_heartbeat_other SELECT generate_series(1, 1000)")
        .await;
    let generated = pg
        .text(&format!(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '{}')::text",
            wal_before.unwrap_or_default()
        ))
        .await;
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let mut heartbeats = 0;
    loop {
        let got = h.poll_for(Duration::from_millis(300)).await.unwrap();
        heartbeats += got
            .iter()
            .filter(|r| &*r.record.topic == "__debezium-heartbeat.cdc_heartbeat")
            .count();
        h.acknowledge_all().await.unwrap();
        h.commit().await.unwrap();
        if heartbeats > 0 && pg.confirmed_flush(name).await != start {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the quiet slot never moved ({heartbeats} heartbeats)"
        );
    }
    // What the slot holds back now (other tests share the server: WAL of
    // theirs counts too); printed for the measurement.
    let lag = pg
        .text(&format!(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::text \
             FROM pg_replication_slots WHERE slot_name = '{name}'"
        ))
        .await;
    eprintln!(
        "{test}: {generated:?} bytes of WAL written to an uncaptured table; \
         after {heartbeats} heartbeats the slot is {lag:?} bytes behind the server"
    );
    h.stop().await.unwrap();
}

#[tokio::test]
async fn column_types_map_as_debezium_maps_them_in_snapshot_and_stream_alike() {
    let test = "column_types_map_as_debezium";
    let Some(pg) = Pg::connect(test).await else {
        return;
    };
    let name = "cdc_types";
    pg.exec("DROP TYPE IF EXISTS cdc_mood CASCADE").await;
    pg.exec("CREATE TYPE cdc_mood AS ENUM ('sad', 'ok', 'happy')")
        .await;
    let row = "1, 32767, 2147483647, 9223372036854775807, 12.34, 3.14159, 1.5, 2.25, 'txt', 'vc', 'ch', \
               '\\x00ff'::bytea, true, '2024-02-29', '13:45:30.123456', '2024-02-29 13:45:30.5', \
               '2024-02-29 13:45:30.5+02', 'P1DT2H'::interval, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', \
               '{\"a\": 1}', '{\"b\": [1, 2]}', '{1,2,NULL}', '{\"x y\",z}', 'happy', '192.168.0.1', \
               '10.0.0.0/8', '08:00:2b:01:02:03', '(1.5,2.5)', B'1', B'101', '13:45:30+02', '$12.50'";
    pg.fresh(
        name,
        &format!(
            "CREATE TABLE {name} (id INT PRIMARY KEY, i2 INT2, i4 INT4, i8 INT8, n NUMERIC(10,2), nv NUMERIC, \
             f4 FLOAT4, f8 FLOAT8, t TEXT, vc VARCHAR(10), ch CHAR(2), b BYTEA, bo BOOL, d DATE, tm TIME, \
             ts TIMESTAMP, tstz TIMESTAMPTZ, iv INTERVAL, u UUID, j JSON, jb JSONB, ia INT[], ta TEXT[], \
             e cdc_mood, inet_c INET, cidr_c CIDR, mac MACADDR, p POINT, bit1 BIT(1), bits BIT(3), ttz TIMETZ, m MONEY); \
             INSERT INTO {name} VALUES ({row})"
        ),
    )
    .await;
    let mut h = harness().await;
    h.start(pg.config(name, &[])).await.unwrap();
    let snap = h.poll_until(1, DEADLINE).await.unwrap();
    pg.exec(&format!(
        "INSERT INTO {name} VALUES ({})",
        row.replacen('1', "2", 1)
    ))
    .await;
    let stream = h.poll_until(1, DEADLINE).await.unwrap();
    let (a, b) = (
        image(&snap[0], "after").unwrap(),
        image(&stream[0], "after").unwrap(),
    );
    for field in a.schema().field_list() {
        if field.name() == "id" {
            continue;
        }
        assert_eq!(
            format!("{:?}", a.get(field.name()).unwrap()),
            format!("{:?}", b.get(field.name()).unwrap()),
            "column {} differs between snapshot and stream",
            field.name()
        );
    }
    let schema_name = |f: &str| {
        a.schema()
            .field(f)
            .unwrap()
            .schema()
            .name()
            .map(str::to_string)
    };
    assert_eq!(
        schema_name("n").as_deref(),
        Some("org.apache.kafka.connect.data.Decimal")
    );
    assert_eq!(
        schema_name("nv").as_deref(),
        Some("io.debezium.data.VariableScaleDecimal")
    );
    assert_eq!(
        schema_name("tstz").as_deref(),
        Some("io.debezium.time.ZonedTimestamp")
    );
    assert_eq!(
        schema_name("ts").as_deref(),
        Some("io.debezium.time.MicroTimestamp")
    );
    assert_eq!(schema_name("e").as_deref(), Some("io.debezium.data.Enum"));
    assert_eq!(schema_name("u").as_deref(), Some("io.debezium.data.Uuid"));
    assert_eq!(schema_name("jb").as_deref(), Some("io.debezium.data.Json"));
    assert_eq!(
        a.get("tstz").unwrap().as_str(),
        Some("2024-02-29T11:45:30.500000Z")
    );
    assert_eq!(a.get("ts").unwrap().as_i64(), Some(1_709_214_330_500_000));
    assert_eq!(a.get("tm").unwrap().as_i64(), Some(49_530_123_456));
    assert_eq!(a.get("d").unwrap().as_i64(), Some(19_782));
    assert_eq!(a.get("e").unwrap().as_str(), Some("happy"));
    assert_eq!(a.get("ttz").unwrap().as_str(), Some("11:45:30Z"));
    assert!(matches!(a.get("bit1").unwrap(), Value::Boolean(true)));
    assert_eq!(a.get("ia").unwrap().as_array().map(|v| v.len()), Some(3));
    h.stop().await.unwrap();
    pg.drop_slot(name).await;
}

#[tokio::test]
async fn a_dropped_connection_resumes_after_the_last_event_handed_over_without_repeats() {
    let test = "a_dropped_connection_resumes_without_repeats";
    let Some(pg) = Pg::connect(test).await else {
        return;
    };
    let name = "cdc_reconnect";
    pg.fresh(name, &format!("CREATE TABLE {name} (id INT PRIMARY KEY)"))
        .await;
    let mut h = harness().await;
    h.start(pg.config(name, &[("snapshot.mode", "no_data")]))
        .await
        .unwrap();
    pg.exec(&format!("INSERT INTO {name} VALUES (1), (2), (3)"))
        .await;
    assert_eq!(
        events(&h.poll_until(3, DEADLINE).await.unwrap()),
        ["c:1", "c:2", "c:3"]
    );
    // Nothing is committed to Kafka yet, so the slot has not moved: the
    // server will send 1, 2 and 3 again on the new connection.
    pg.exec(&format!(
        "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '{name}'"
    ))
    .await;
    pg.exec(&format!("INSERT INTO {name} VALUES (4)")).await;
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while got.is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "nothing after the reconnect"
        );
        match h.poll().await {
            Ok(records) => got.extend(records),
            Err(e) => assert!(e.is_retriable(), "{e}"),
        }
    }
    got.extend(h.poll_for(Duration::from_millis(500)).await.unwrap());
    assert_eq!(events(&got), ["c:4"], "only the new change, none again");
    h.stop().await.unwrap();
}

fn header<'a>(r: &'a SourceRecord, name: &str) -> Option<&'a Value> {
    r.record.headers.last_with_name(name).map(|h| h.value())
}

#[tokio::test]
async fn key_changes_deletes_and_full_identity_look_like_debeziums_events() {
    let test = "key_changes_deletes_and_full_identity";
    let Some(pg) = Pg::connect(test).await else {
        return;
    };
    let name = "cdc_keys";
    pg.fresh(
        name,
        &format!("CREATE TABLE {name} (id INT PRIMARY KEY, label TEXT NOT NULL, note TEXT)"),
    )
    .await;
    let mut h = harness().await;
    h.start(pg.config(name, &[("snapshot.mode", "no_data")]))
        .await
        .unwrap();
    pg.exec(&format!(
        "INSERT INTO {name} VALUES (1, 'one', 'n1'); \
         UPDATE {name} SET id = 10 WHERE id = 1; \
         DELETE FROM {name} WHERE id = 10; \
         INSERT INTO {name} VALUES (2, 'two', NULL); \
         ALTER TABLE {name} REPLICA IDENTITY FULL; \
         UPDATE {name} SET note = 'changed' WHERE id = 2"
    ))
    .await;
    let got = h.poll_until(8, DEADLINE).await.unwrap();
    let ops: Vec<String> = got.iter().map(op).collect();
    assert_eq!(
        ops,
        ["c", "d", "tombstone", "c", "d", "tombstone", "c", "u"]
    );
    // The key change: a delete of key 1 naming the new key, its
    // tombstone, a create of key 10 naming the old one.
    assert_eq!(id(&got[1]), 1);
    let new_key = header(&got[1], "__debezium.newkey")
        .and_then(Value::as_struct)
        .unwrap();
    assert_eq!(new_key.get("id").unwrap().as_i64(), Some(10));
    assert_eq!(id(&got[3]), 10);
    let old_key = header(&got[3], "__debezium.oldkey")
        .and_then(Value::as_struct)
        .unwrap();
    assert_eq!(old_key.get("id").unwrap().as_i64(), Some(1));
    // A delete under REPLICA IDENTITY DEFAULT knows the key only: the NOT
    // NULL column gets its type's zero, the nullable one null.
    let before = image(&got[4], "before").unwrap();
    assert_eq!(before.get("id").unwrap().as_i64(), Some(10));
    assert_eq!(before.get("label").unwrap().as_str(), Some(""));
    assert!(before.get("note").unwrap().is_null());
    // FULL identity: the update carries the old row.
    let before = image(&got[7], "before").unwrap();
    assert!(before.get("note").unwrap().is_null());
    assert_eq!(
        image(&got[7], "after")
            .unwrap()
            .get("note")
            .unwrap()
            .as_str(),
        Some("changed")
    );
    // Debezium's extended headers on every event and tombstone.
    for r in &got {
        assert_eq!(
            header(r, "__debezium.context.connectorLogicalName").and_then(Value::as_str),
            Some(name)
        );
        assert_eq!(
            header(r, "__debezium.context.connectorName").and_then(Value::as_str),
            Some("postgresql")
        );
    }
    h.stop().await.unwrap();
    pg.drop_slot(name).await;
}

#[tokio::test]
async fn a_snapshot_interrupted_by_a_crash_is_taken_again_and_nothing_is_lost() {
    let test = "a_snapshot_interrupted_by_a_crash";
    let Some(pg) = Pg::connect(test).await else {
        return;
    };
    let name = "cdc_snapcrash";
    pg.fresh(
        name,
        &format!("CREATE TABLE {name} (id INT PRIMARY KEY); INSERT INTO {name} SELECT generate_series(1, 5)"),
    )
    .await;
    let mut h = harness().await;
    h.start(pg.config(name, &[("max.batch.size", "2")]))
        .await
        .unwrap();
    let got = h.poll_until(2, DEADLINE).await.unwrap();
    assert_eq!(events(&got), ["r:1", "r:2"]);
    // Two snapshot records are stored (an unfinished snapshot's offset),
    // a row is added, and the worker dies mid-snapshot.
    h.acknowledge_all().await.unwrap();
    h.commit().await.unwrap();
    pg.exec(&format!("INSERT INTO {name} VALUES (6)")).await;
    h.restart().await.unwrap();
    // The snapshot is taken again from the start; the stream continues
    // from the slot, so row 6 may come twice (as Debezium), never not.
    pg.exec(&format!("INSERT INTO {name} VALUES (7)")).await;
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !seen.contains(&"c:7".to_string()) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "row 7 never came: {seen:?}"
        );
        seen.extend(events(&h.poll().await.unwrap()));
    }
    assert_eq!(
        &seen[..6],
        ["r:1", "r:2", "r:3", "r:4", "r:5", "r:6"],
        "{seen:?}"
    );
    assert!(
        seen[6..] == ["c:6", "c:7"] || seen[6..] == ["c:7"],
        "after the snapshot: {seen:?}"
    );
    h.stop().await.unwrap();
    pg.drop_slot(name).await;
}

#[tokio::test]
async fn a_stored_position_the_slot_no_longer_holds_is_refused_at_start() {
    let test = "a_stored_position_the_slot_no_longer_holds";
    let Some(pg) = Pg::connect(test).await else {
        return;
    };
    let name = "cdc_oldpos";
    pg.fresh(name, &format!("CREATE TABLE {name} (id INT PRIMARY KEY)"))
        .await;
    pg.exec(&format!(
        "SELECT pg_create_logical_replication_slot('{name}', 'pgoutput')"
    ))
    .await;
    // An offset from long before the slot's oldest WAL (another slot's,
    // or one the slot was advanced past).
    let mut partition = connect_api::SourceMap::new();
    partition.insert("server".into(), serde_json::json!(name));
    let mut offset = connect_api::SourceMap::new();
    for key in ["lsn", "lsn_proc", "lsn_commit"] {
        offset.insert(key.into(), serde_json::json!(16));
    }
    let mut h = harness().await.with_offset(partition, offset);
    let err = h.start(pg.config(name, &[])).await.unwrap_err().to_string();
    assert!(
        err.contains("keeps WAL only from") && err.contains("when_needed"),
        "{err}"
    );
    pg.drop_slot(name).await;
}

#[tokio::test]
async fn snapshot_mode_always_snapshots_at_every_start_and_slot_drop_on_stop_drops_the_slot() {
    let test = "snapshot_mode_always_and_slot_drop_on_stop";
    let Some(pg) = Pg::connect(test).await else {
        return;
    };
    let name = "cdc_always";
    pg.fresh(
        name,
        &format!("CREATE TABLE {name} (id INT PRIMARY KEY); INSERT INTO {name} VALUES (1), (2)"),
    )
    .await;
    let config = pg.config(
        name,
        &[("snapshot.mode", "always"), ("slot.drop.on.stop", "true")],
    );
    let mut h = harness().await;
    h.start(config.clone()).await.unwrap();
    assert_eq!(
        events(&h.poll_until(2, DEADLINE).await.unwrap()),
        ["r:1", "r:2"]
    );
    h.acknowledge_all().await.unwrap();
    h.commit().await.unwrap();
    h.stop().await.unwrap();
    assert_eq!(
        pg.text(&format!(
            "SELECT count(*)::text FROM pg_replication_slots WHERE slot_name = '{name}'"
        ))
        .await
        .as_deref(),
        Some("0"),
        "slot.drop.on.stop=true drops the slot"
    );
    // A committed offset, and still a new snapshot.
    h.start(config).await.unwrap();
    assert_eq!(
        events(&h.poll_until(2, DEADLINE).await.unwrap()),
        ["r:1", "r:2"]
    );
    h.stop().await.unwrap();
}
