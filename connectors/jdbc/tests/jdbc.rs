//! The JDBC connectors against real databases: SQLite embedded (always),
//! PostgreSQL and MariaDB from `tools/databases/databases.sh` (SKIPPED
//! loudly without them; `.ci/run` starts both).

use std::time::Duration;

use connect_api::{
    ConfigMap, Record, Schema, SchemaBuilder, SinkRecord, SourceRecord, Struct, TopicPartition,
    Value,
};
use connect_jdbc::{JdbcSinkConnector, JdbcSourceConnector};
use connect_testkit::{connector_task_configs, sink_records, SinkHarness, SourceHarness};

/// A database the tests run against, and a plain connection to set up
/// tables and read them back.
struct Db {
    name: &'static str,
    url: String,
    user: &'static str,
    password: &'static str,
    admin: Admin,
    _dir: Option<tempfile::TempDir>,
}

enum Admin {
    Pg(sqlx::PgPool),
    My(sqlx::MySqlPool),
    Lite(sqlx::SqlitePool),
}

impl Db {
    async fn sqlite() -> Db {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("test.db");
        let opts = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true);
        let admin = sqlx::SqlitePool::connect_with(opts).await.unwrap();
        Db {
            name: "sqlite",
            url: format!("jdbc:sqlite:{}", path.display()),
            user: "",
            password: "",
            admin: Admin::Lite(admin),
            _dir: Some(dir),
        }
    }

    async fn postgres(test: &str) -> Option<Db> {
        let url = connect_test_support::real_database("JDBC_TEST_POSTGRES_URL", test)?;
        let admin_url = url.replace("jdbc:postgresql://", "postgres://postgres@");
        Some(Db {
            name: "postgres",
            url,
            user: "postgres",
            password: "",
            admin: Admin::Pg(sqlx::PgPool::connect(&admin_url).await.unwrap()),
            _dir: None,
        })
    }

    async fn mariadb(test: &str) -> Option<Db> {
        let url = connect_test_support::real_database("JDBC_TEST_MARIADB_URL", test)?;
        let admin_url = url.replace("jdbc:mariadb://", "mysql://connect:connect@");
        Some(Db {
            name: "mariadb",
            url,
            user: "connect",
            password: "connect",
            admin: Admin::My(sqlx::MySqlPool::connect(&admin_url).await.unwrap()),
            _dir: None,
        })
    }

    /// SQLite always, then the servers that are up.
    async fn all(test: &str) -> Vec<Db> {
        let mut dbs = vec![Db::sqlite().await];
        dbs.extend(Db::postgres(test).await);
        dbs.extend(Db::mariadb(test).await);
        dbs
    }

    async fn exec(&self, sql: &str) {
        let r = match &self.admin {
            Admin::Pg(p) => sqlx::raw_sql(sql).execute(p).await.map(|_| ()),
            Admin::My(p) => sqlx::raw_sql(sql).execute(p).await.map(|_| ()),
            Admin::Lite(p) => sqlx::raw_sql(sql).execute(p).await.map(|_| ()),
        };
        r.unwrap_or_else(|e| panic!("{}: {sql}: {e}", self.name));
    }

    /// The rows of a query with every column cast to text by the query.
    async fn texts(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        use sqlx::Row;
        macro_rules! rows {
            ($p:expr) => {
                sqlx::query(sql)
                    .fetch_all($p)
                    .await
                    .unwrap_or_else(|e| panic!("{}: {sql}: {e}", self.name))
                    .iter()
                    .map(|r| {
                        (0..r.len())
                            .map(|i| {
                                r.try_get_unchecked::<Option<String>, _>(i)
                                    .unwrap()
                                    .map(|s| s.trim().to_string())
                            })
                            .collect()
                    })
                    .collect()
            };
        }
        match &self.admin {
            Admin::Pg(p) => rows!(p),
            Admin::My(p) => rows!(p),
            Admin::Lite(p) => rows!(p),
        }
    }

    fn config(&self, pairs: &[(&str, &str)]) -> ConfigMap {
        let mut c = ConfigMap::from([("connection.url", self.url.as_str())]);
        if !self.user.is_empty() {
            c.insert("connection.user".into(), self.user.into());
            c.insert("connection.password".into(), self.password.into());
        }
        for (k, v) in pairs {
            c.insert(k.to_string(), v.to_string());
        }
        c
    }

    /// A timestamp column with microseconds in this database's spelling.
    fn timestamp_type(&self) -> &'static str {
        match self.admin {
            Admin::Pg(_) => "TIMESTAMP(6)",
            Admin::My(_) => "DATETIME(6)",
            Admin::Lite(_) => "DATETIME",
        }
    }
}

fn field<'a>(r: &'a SourceRecord, name: &str) -> &'a Value {
    r.value.as_struct().unwrap().get(name).unwrap()
}

fn ids(records: &[SourceRecord]) -> Vec<i64> {
    records
        .iter()
        .map(|r| match field(r, "id") {
            Value::Int32(v) => i64::from(*v),
            Value::Int64(v) => *v,
            other => panic!("id is {other:?}"),
        })
        .collect()
}

/// The one task config the connector gives `config`.
async fn task_config(config: &ConfigMap) -> ConfigMap {
    let (mut tasks, _) = connector_task_configs(&mut JdbcSourceConnector::default(), config, 1)
        .await
        .unwrap();
    assert_eq!(tasks.len(), 1, "one table, one task");
    tasks.remove(0)
}

const DEADLINE: Duration = Duration::from_secs(30);

#[tokio::test]
async fn incrementing_mode_reads_new_rows_with_confluents_topic_offsets_and_types_and_resumes() {
    for db in Db::all("incrementing_mode_reads_new_rows").await {
        db.exec("DROP TABLE IF EXISTS inc_orders").await;
        db.exec("CREATE TABLE inc_orders (id INTEGER NOT NULL PRIMARY KEY, name VARCHAR(40), amount DECIMAL(10,2))")
            .await;
        db.exec("INSERT INTO inc_orders VALUES (1, 'a', 1.50), (2, NULL, 2.25)")
            .await;
        let config = db.config(&[
            ("mode", "incrementing"),
            ("incrementing.column.name", "id"),
            ("topic.prefix", "db-"),
            ("table.whitelist", "inc_orders"),
            ("poll.interval.ms", "50"),
        ]);
        let task = task_config(&config).await;
        let mut h = SourceHarness::for_connector(JdbcSourceConnector::default());
        h.start(task.clone()).await.unwrap();
        let got = h.poll_until(2, DEADLINE).await.unwrap();
        assert_eq!(ids(&got), [1, 2], "{}", db.name);
        assert_eq!(&*got[0].topic, "db-inc_orders", "{}", db.name);
        assert_eq!(field(&got[0], "name"), &Value::from("a"));
        assert_eq!(field(&got[1], "name"), &Value::Null);
        if db.name != "sqlite" {
            assert_eq!(
                field(&got[0], "amount"),
                &Value::Decimal(connect_api::Decimal::new(150, 2)),
                "{}",
                db.name
            );
        }
        let schema = got[0].value_schema.as_ref().unwrap();
        assert_eq!(schema.name(), Some("inc_orders"));
        assert!(
            !schema.field("id").unwrap().schema().is_optional(),
            "{}: NOT NULL id",
            db.name
        );
        assert!(schema.field("name").unwrap().schema().is_optional());
        assert_eq!(
            serde_json::Value::Object(got[1].source_offset.clone()),
            serde_json::json!({"incrementing": 2}),
            "{}",
            db.name
        );
        assert_eq!(
            got[1].source_partition.get("protocol"),
            Some(&serde_json::json!("1"))
        );
        h.acknowledge_all().await.unwrap();
        h.commit().await.unwrap();
        // New rows after a restart: only they come, none again.
        h.stop().await.unwrap();
        db.exec("INSERT INTO inc_orders VALUES (3, 'c', 3.00)")
            .await;
        h.start(task).await.unwrap();
        let got = h.poll_until(1, DEADLINE).await.unwrap();
        assert_eq!(ids(&got), [3], "{}", db.name);
        assert!(
            h.poll_for(Duration::from_millis(300))
                .await
                .unwrap()
                .is_empty(),
            "{}",
            db.name
        );
        h.stop().await.unwrap();
    }
}

#[tokio::test]
async fn timestamp_mode_keeps_rows_that_share_the_last_timestamp_across_batches() {
    let test = "timestamp_mode_keeps_rows_that_share_the_last_timestamp";
    let dbs: Vec<Db> = [Db::postgres(test).await, Db::mariadb(test).await]
        .into_iter()
        .flatten()
        .collect();
    for db in dbs {
        db.exec("DROP TABLE IF EXISTS ts_rows").await;
        db.exec(&format!(
            "CREATE TABLE ts_rows (id INT NOT NULL, ts {} NOT NULL)",
            db.timestamp_type()
        ))
        .await;
        // Rows 2, 3 and 4 share a timestamp; batches hold two rows. Reading
        // `ts > last` after a batch that ends inside the group (Confluent's
        // connector) loses rows 3 and 4.
        db.exec(
            "INSERT INTO ts_rows VALUES (1, '2024-01-01 00:00:01'), (2, '2024-01-01 00:00:02'), \
             (3, '2024-01-01 00:00:02'), (4, '2024-01-01 00:00:02'), (5, '2024-01-01 00:00:03')",
        )
        .await;
        let config = db.config(&[
            ("mode", "timestamp"),
            ("timestamp.column.name", "ts"),
            ("topic.prefix", "db-"),
            ("table.whitelist", "ts_rows"),
            ("batch.max.rows", "2"),
            ("poll.interval.ms", "50"),
        ]);
        let task = task_config(&config).await;
        let mut h = SourceHarness::for_connector(JdbcSourceConnector::default());
        h.start(task).await.unwrap();
        let mut got = h.poll_until(5, DEADLINE).await.unwrap();
        got.extend(h.poll_for(Duration::from_millis(300)).await.unwrap());
        let mut seen = ids(&got);
        seen.sort();
        assert_eq!(seen, [1, 2, 3, 4, 5], "{}: every row once", db.name);
        let last = got.last().unwrap();
        assert_eq!(
            serde_json::Value::Object(last.source_offset.clone()),
            serde_json::json!({"timestamp": 1_704_067_203_000i64, "timestamp_nanos": 0}),
            "{}",
            db.name
        );
        h.stop().await.unwrap();
    }
}

#[tokio::test]
async fn a_row_whose_transaction_commits_after_a_poll_is_not_skipped() {
    let test = "a_row_whose_transaction_commits_after_a_poll_is_not_skipped";
    let dbs: Vec<Db> = [Db::postgres(test).await, Db::mariadb(test).await]
        .into_iter()
        .flatten()
        .collect();
    for db in dbs {
        db.exec("DROP TABLE IF EXISTS late_rows").await;
        let now = if db.name == "postgres" {
            "now()"
        } else {
            "NOW(6)"
        };
        db.exec(&format!(
            "CREATE TABLE late_rows (id INT NOT NULL, ts {} NOT NULL)",
            db.timestamp_type()
        ))
        .await;
        let config = db.config(&[
            ("mode", "timestamp"),
            ("timestamp.column.name", "ts"),
            ("topic.prefix", "db-"),
            ("table.whitelist", "late_rows"),
            ("poll.interval.ms", "50"),
        ]);
        let task = task_config(&config).await;
        // A transaction stamps row 1, then stays open while row 2 commits
        // with a later timestamp and the connector polls.
        let mut slow = match &db.admin {
            Admin::Pg(p) => Slow::Pg(p.acquire().await.unwrap()),
            Admin::My(p) => Slow::My(p.acquire().await.unwrap()),
            Admin::Lite(_) => unreachable!("SQLite has one writer at a time"),
        };
        slow.exec("BEGIN").await;
        slow.exec(&format!("INSERT INTO late_rows VALUES (1, {now})"))
            .await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        db.exec(&format!("INSERT INTO late_rows VALUES (2, {now})"))
            .await;
        let mut h = SourceHarness::for_connector(JdbcSourceConnector::default());
        h.start(task).await.unwrap();
        let mut got = h.poll_for(Duration::from_millis(500)).await.unwrap();
        slow.commit().await;
        got.extend(
            h.poll_until(2usize.saturating_sub(got.len()), DEADLINE)
                .await
                .unwrap(),
        );
        got.extend(h.poll_for(Duration::from_millis(300)).await.unwrap());
        let mut seen = ids(&got);
        seen.sort();
        assert_eq!(
            seen,
            [1, 2],
            "{}: the late row is read once it commits",
            db.name
        );
        h.stop().await.unwrap();
    }
}

/// A connection of its own, for a transaction left open across polls.
enum Slow {
    Pg(sqlx::pool::PoolConnection<sqlx::Postgres>),
    My(sqlx::pool::PoolConnection<sqlx::MySql>),
}

impl Slow {
    async fn exec(&mut self, sql: &str) {
        match self {
            Slow::Pg(c) => sqlx::raw_sql(sql).execute(&mut **c).await.map(|_| ()),
            Slow::My(c) => sqlx::raw_sql(sql).execute(&mut **c).await.map(|_| ()),
        }
        .unwrap();
    }
    async fn commit(mut self) {
        self.exec("COMMIT").await;
    }
}

fn key_schema() -> Schema {
    SchemaBuilder::struct_()
        .name("Key")
        .field("id", Schema::int64())
        .build()
        .unwrap()
}

fn value_schema(with_note: bool) -> Schema {
    let mut b = SchemaBuilder::struct_()
        .name("Value")
        .field("id", Schema::int64())
        .field("name", Schema::optional_string())
        .field(
            "amount",
            connect_api::logical::decimal_builder(2)
                .optional()
                .build()
                .unwrap(),
        );
    if with_note {
        b = b.field("note", Schema::optional_string());
    }
    b.build().unwrap()
}

fn upsert(topic: &str, id: i64, name: &str, cents: i64, note: Option<&str>) -> Record {
    let vs = value_schema(note.is_some());
    let mut v = Struct::new(vs.clone()).unwrap();
    v.put("id", id).unwrap();
    v.put("name", name).unwrap();
    v.put(
        "amount",
        Value::Decimal(connect_api::Decimal::new(cents, 2)),
    )
    .unwrap();
    if let Some(n) = note {
        v.put("note", n).unwrap();
    }
    let mut k = Struct::new(key_schema()).unwrap();
    k.put("id", id).unwrap();
    Record::new(topic, Some(vs), Value::Struct(v)).with_key(Some(key_schema()), Value::Struct(k))
}

fn tombstone(topic: &str, id: i64) -> Record {
    let mut k = Struct::new(key_schema()).unwrap();
    k.put("id", id).unwrap();
    Record::new(topic, None, Value::Null).with_key(Some(key_schema()), Value::Struct(k))
}

#[tokio::test]
async fn the_sink_creates_upserts_evolves_and_deletes_and_redelivery_changes_nothing() {
    for db in Db::all("the_sink_creates_upserts_evolves_and_deletes").await {
        db.exec("DROP TABLE IF EXISTS sink_orders").await;
        let config = db.config(&[
            ("topics", "sink_orders"),
            ("insert.mode", "upsert"),
            ("pk.mode", "record_key"),
            ("delete.enabled", "true"),
            ("auto.create", "true"),
            ("auto.evolve", "true"),
        ]);
        // No error reporter (errors.tolerance=none): any refused statement
        // fails the put, so the batch must be written as it is.
        let mut h = SinkHarness::for_connector(JdbcSinkConnector::default()).without_reporter();
        h.start(config).await.unwrap();
        h.open(&[TopicPartition::new("sink_orders", 0)])
            .await
            .unwrap();
        let batch = sink_records(
            0,
            0,
            [
                upsert("sink_orders", 1, "a", 150, None),
                upsert("sink_orders", 2, "b", 200, None),
                upsert("sink_orders", 1, "A", 151, None),
            ],
        );
        h.put(&batch).await.unwrap();
        // Redelivered after a crash: the same rows, not twice.
        h.put(&batch).await.unwrap();
        // A new optional field adds a column; a tombstone deletes row 2.
        let later: Vec<SinkRecord> = sink_records(
            0,
            3,
            [
                upsert("sink_orders", 3, "c", 300, Some("new")),
                tombstone("sink_orders", 2),
            ],
        );
        h.put(&later).await.unwrap();
        let rows = db
            .texts("SELECT CAST(id AS CHAR(20)), name, CAST(amount AS CHAR(20)), note FROM sink_orders ORDER BY id")
            .await;
        let rows: Vec<(String, String, f64, Option<String>)> = rows
            .into_iter()
            .map(|r| {
                let amount = r[2]
                    .as_deref()
                    .unwrap()
                    .parse::<f64>()
                    .unwrap_or_else(|e| panic!("{}: {r:?}: {e}", db.name));
                (
                    r[0].clone().unwrap(),
                    r[1].clone().unwrap(),
                    amount,
                    r[3].clone(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            vec![
                ("1".into(), "A".into(), 1.51, None),
                ("3".into(), "c".into(), 3.0, Some("new".into()))
            ],
            "{}",
            db.name
        );
        h.stop().await.unwrap();
    }
}

#[tokio::test]
async fn a_row_the_database_refuses_goes_to_the_reporter_and_the_rest_of_the_batch_commits() {
    for db in Db::all("a_row_the_database_refuses_goes_to_the_reporter").await {
        db.exec("DROP TABLE IF EXISTS checked").await;
        db.exec(
            "CREATE TABLE checked (id BIGINT NOT NULL PRIMARY KEY, name VARCHAR(40), amount DECIMAL(10,2), \
             CHECK (amount >= 0))",
        )
        .await;
        let config = db.config(&[
            ("topics", "checked"),
            ("insert.mode", "upsert"),
            ("pk.mode", "record_key"),
        ]);
        let mut h = SinkHarness::for_connector(JdbcSinkConnector::default());
        h.start(config).await.unwrap();
        h.open(&[TopicPartition::new("checked", 0)]).await.unwrap();
        let batch = sink_records(
            0,
            10,
            [
                upsert("checked", 1, "a", 100, None),
                upsert("checked", 2, "poison", -5, None),
                upsert("checked", 3, "c", 300, None),
            ],
        );
        h.put(&batch).await.unwrap();
        let rows = db
            .texts("SELECT CAST(id AS CHAR(20)) FROM checked ORDER BY id")
            .await;
        assert_eq!(
            rows,
            vec![vec![Some("1".to_string())], vec![Some("3".to_string())]],
            "{}",
            db.name
        );
        let reports = h.reporter().unwrap().reports();
        assert_eq!(reports.len(), 1, "{}: {reports:?}", db.name);
        assert_eq!(reports[0].record.kafka_offset, 11, "{}", db.name);
        assert!(
            reports[0].error.contains("checked"),
            "{}: the error names the table: {}",
            db.name,
            reports[0].error
        );
        h.stop().await.unwrap();
    }
}

/// A TCP proxy in front of a database server: `cut` drops every
/// connection and refuses new ones (the database is away), `restore`
/// listens again on the same port.
struct Proxy {
    port: u16,
    target: std::net::SocketAddr,
    tasks: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Proxy {
    async fn start(url: &str) -> (Proxy, String) {
        let authority = url.split("//").nth(1).unwrap().split('/').next().unwrap();
        let target: std::net::SocketAddr = authority.parse().unwrap();
        let port = connect_test_support::free_port().unwrap();
        let proxy = Proxy {
            port,
            target,
            tasks: Default::default(),
        };
        proxy.restore();
        (proxy, url.replace(authority, &format!("127.0.0.1:{port}")))
    }

    fn restore(&self) {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_reuseaddr(true).unwrap();
        socket.bind(([127, 0, 0, 1], self.port).into()).unwrap();
        let listener = socket.listen(64).unwrap();
        let (target, tasks) = (self.target, self.tasks.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let conn = tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                tasks.lock().unwrap().push(conn);
            }
        });
        self.tasks.lock().unwrap().push(accept);
    }

    fn cut(&self) {
        for t in self.tasks.lock().unwrap().drain(..) {
            t.abort();
        }
    }
}

#[tokio::test]
async fn the_sink_retries_while_the_database_is_away_and_ends_with_every_row_once() {
    let test = "the_sink_retries_while_the_database_is_away";
    let dbs: Vec<Db> = [Db::postgres(test).await, Db::mariadb(test).await]
        .into_iter()
        .flatten()
        .collect();
    for mut db in dbs {
        db.exec("DROP TABLE IF EXISTS away_orders").await;
        let (proxy, url) = Proxy::start(&db.url).await;
        let direct = std::mem::replace(&mut db.url, url);
        let config = db.config(&[
            ("topics", "away_orders"),
            ("insert.mode", "upsert"),
            ("pk.mode", "record_key"),
            ("auto.create", "true"),
        ]);
        db.url = direct;
        let mut h = SinkHarness::for_connector(JdbcSinkConnector::default());
        h.start(config).await.unwrap();
        h.open(&[TopicPartition::new("away_orders", 0)])
            .await
            .unwrap();
        let first = sink_records(
            0,
            0,
            (1..=3).map(|i| upsert("away_orders", i, "x", i * 100, None)),
        );
        h.put(&first).await.unwrap();
        proxy.cut();
        let second = sink_records(
            0,
            3,
            (4..=6).map(|i| upsert("away_orders", i, "y", i * 100, None)),
        );
        let err = h.put(&second).await.unwrap_err();
        assert!(
            err.is_retriable(),
            "{}: the database being away is retriable: {err}",
            db.name
        );
        let ids = |rows: Vec<Vec<Option<String>>>| {
            rows.into_iter()
                .map(|r| r[0].clone().unwrap())
                .collect::<Vec<_>>()
        };
        let count = "SELECT CAST(id AS CHAR(20)) FROM away_orders ORDER BY id";
        assert_eq!(
            ids(db.texts(count).await),
            ["1", "2", "3"],
            "{}: nothing of the failed put",
            db.name
        );
        proxy.restore();
        // The worker redelivers the same records (and, after a crash, the
        // ones before them: upsert makes that harmless).
        h.put(&second).await.unwrap();
        h.put(&first).await.unwrap();
        assert_eq!(
            ids(db.texts(count).await),
            ["1", "2", "3", "4", "5", "6"],
            "{}",
            db.name
        );
        h.stop().await.unwrap();
        proxy.cut();
    }
}

#[tokio::test]
async fn the_source_resumes_where_it_was_when_the_database_comes_back() {
    let test = "the_source_resumes_where_it_was_when_the_database_comes_back";
    let dbs: Vec<Db> = [Db::postgres(test).await, Db::mariadb(test).await]
        .into_iter()
        .flatten()
        .collect();
    for mut db in dbs {
        db.exec("DROP TABLE IF EXISTS away_rows").await;
        db.exec("CREATE TABLE away_rows (id INT NOT NULL PRIMARY KEY, name VARCHAR(10))")
            .await;
        db.exec("INSERT INTO away_rows VALUES (1, 'a'), (2, 'b')")
            .await;
        let (proxy, url) = Proxy::start(&db.url).await;
        let direct = std::mem::replace(&mut db.url, url);
        let config = db.config(&[
            ("mode", "incrementing"),
            ("incrementing.column.name", "id"),
            ("topic.prefix", "db-"),
            ("table.whitelist", "away_rows"),
            ("poll.interval.ms", "50"),
        ]);
        db.url = direct;
        let task = task_config(&config).await;
        let mut h = SourceHarness::for_connector(JdbcSourceConnector::default());
        h.start(task).await.unwrap();
        assert_eq!(
            ids(&h.poll_until(2, DEADLINE).await.unwrap()),
            [1, 2],
            "{}",
            db.name
        );
        proxy.cut();
        db.exec("INSERT INTO away_rows VALUES (3, 'c'), (4, 'd')")
            .await;
        let err = loop {
            match h.poll().await {
                Err(e) => break e,
                Ok(batch) => assert!(
                    batch.is_empty(),
                    "{}: rows read through a cut connection",
                    db.name
                ),
            }
        };
        assert!(err.is_retriable(), "{}: {err}", db.name);
        proxy.restore();
        let mut got = h.poll_until(2, DEADLINE).await.unwrap();
        got.extend(h.poll_for(Duration::from_millis(300)).await.unwrap());
        assert_eq!(ids(&got), [3, 4], "{}: each row once, in order", db.name);
        h.stop().await.unwrap();
        proxy.cut();
    }
}

#[tokio::test]
async fn tables_spread_over_tasks_and_a_new_table_reconfigures_the_connector() {
    use connect_api::{Connector, ConnectorContext};
    let db = Db::sqlite().await;
    for t in ["spread_a", "spread_b", "spread_c"] {
        db.exec(&format!(
            "CREATE TABLE {t} (id INTEGER NOT NULL PRIMARY KEY)"
        ))
        .await;
    }
    let config = db.config(&[
        ("mode", "incrementing"),
        ("incrementing.column.name", "id"),
        ("topic.prefix", "db-"),
        ("table.blacklist", "spread_c"),
        ("table.poll.interval.ms", "50"),
    ]);
    let mut connector = JdbcSourceConnector::default();
    let context = std::sync::Arc::new(connect_testkit::FakeConnectorContext::default());
    let given: std::sync::Arc<dyn ConnectorContext> = context.clone();
    connector.start(&config, given).await.unwrap();
    let tasks = connector.task_configs(3).await.unwrap();
    let mut tables: Vec<&str> = tasks.iter().map(|t| t["tables"].as_str()).collect();
    tables.sort();
    assert_eq!(
        tables,
        ["spread_a", "spread_b"],
        "one table per task, the excluded one left out"
    );
    assert_eq!(
        connector.task_configs(1).await.unwrap()[0]["tables"],
        "spread_a,spread_b"
    );
    db.exec("CREATE TABLE spread_d (id INTEGER NOT NULL PRIMARY KEY)")
        .await;
    let start = tokio::time::Instant::now();
    while context.reconfigurations() == 0 {
        assert!(
            start.elapsed() < DEADLINE,
            "the new table was never noticed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(connector.task_configs(3).await.unwrap().len(), 3);
    connector.stop().await.unwrap();
}

#[tokio::test]
async fn query_mode_reads_the_query_into_the_prefix_topic_with_a_query_partition() {
    let db = Db::sqlite().await;
    db.exec("CREATE TABLE q_orders (id INTEGER NOT NULL PRIMARY KEY, name TEXT)")
        .await;
    db.exec("INSERT INTO q_orders VALUES (1, 'keep'), (2, 'skip'), (3, 'keep')")
        .await;
    let config = db.config(&[
        ("mode", "incrementing"),
        ("incrementing.column.name", "id"),
        (
            "query",
            "SELECT id, name FROM q_orders WHERE name <> 'skip'",
        ),
        ("topic.prefix", "kept-orders"),
        ("poll.interval.ms", "50"),
    ]);
    let (tasks, _) = connector_task_configs(&mut JdbcSourceConnector::default(), &config, 4)
        .await
        .unwrap();
    assert_eq!(tasks.len(), 1, "a query is one task");
    let mut h = SourceHarness::for_connector(JdbcSourceConnector::default());
    h.start(tasks[0].clone()).await.unwrap();
    let got = h.poll_until(2, DEADLINE).await.unwrap();
    assert_eq!(ids(&got), [1, 3]);
    assert_eq!(&*got[0].topic, "kept-orders");
    assert_eq!(
        serde_json::Value::Object((*got[0].source_partition).clone()),
        serde_json::json!({"query": "query"})
    );
    h.stop().await.unwrap();
}

#[tokio::test]
async fn the_sink_keys_rows_by_kafka_coordinates_or_value_fields_and_updates_in_place() {
    let db = Db::sqlite().await;
    // pk.mode=kafka with fields.whitelist: the coordinates and one field.
    let config = db.config(&[
        ("topics", "coords"),
        ("pk.mode", "kafka"),
        ("fields.whitelist", "name"),
        ("auto.create", "true"),
    ]);
    let mut h = SinkHarness::for_connector(JdbcSinkConnector::default()).without_reporter();
    h.start(config).await.unwrap();
    h.open(&[TopicPartition::new("coords", 0)]).await.unwrap();
    h.put(&sink_records(
        0,
        7,
        [
            upsert("coords", 1, "a", 100, None),
            upsert("coords", 2, "b", 200, None),
        ],
    ))
    .await
    .unwrap();
    let rows = db
        .texts("SELECT __connect_topic, CAST(__connect_partition AS TEXT), CAST(__connect_offset AS TEXT), name FROM coords ORDER BY 3")
        .await;
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        rows,
        vec![
            vec![s("coords"), s("0"), s("7"), s("a")],
            vec![s("coords"), s("0"), s("8"), s("b")]
        ]
    );
    let columns = db
        .texts("SELECT name FROM pragma_table_info('coords') ORDER BY cid")
        .await;
    assert_eq!(
        columns.len(),
        4,
        "only the whitelisted field besides the key: {columns:?}"
    );
    h.stop().await.unwrap();
    // pk.mode=record_value with update: rows change in place by id.
    db.exec("CREATE TABLE by_value (id INTEGER NOT NULL PRIMARY KEY, name TEXT, amount REAL)")
        .await;
    db.exec("INSERT INTO by_value VALUES (1, 'old', 1.0)").await;
    let config = db.config(&[
        ("topics", "by_value"),
        ("insert.mode", "update"),
        ("pk.mode", "record_value"),
        ("pk.fields", "id"),
    ]);
    let mut h = SinkHarness::for_connector(JdbcSinkConnector::default()).without_reporter();
    h.start(config).await.unwrap();
    h.open(&[TopicPartition::new("by_value", 0)]).await.unwrap();
    h.put(&sink_records(
        0,
        0,
        [upsert("by_value", 1, "new", 250, None)],
    ))
    .await
    .unwrap();
    let rows = db
        .texts("SELECT CAST(id AS TEXT), name, CAST(amount AS TEXT) FROM by_value")
        .await;
    assert_eq!(rows, vec![vec![s("1"), s("new"), s("2.5")]]);
    h.stop().await.unwrap();
}

#[tokio::test]
async fn a_delay_beyond_any_date_reads_nothing_instead_of_panicking() {
    let db = Db::sqlite().await;
    db.exec("CREATE TABLE far (id INTEGER NOT NULL PRIMARY KEY, ts DATETIME NOT NULL)")
        .await;
    db.exec("INSERT INTO far VALUES (1, '2024-01-01 00:00:00')")
        .await;
    let config = db.config(&[
        ("mode", "timestamp"),
        ("timestamp.column.name", "ts"),
        ("topic.prefix", "db-"),
        ("poll.interval.ms", "50"),
        ("timestamp.delay.interval.ms", &i64::MAX.to_string()),
    ]);
    let task = task_config(&config).await;
    let mut h = SourceHarness::for_connector(JdbcSourceConnector::default());
    h.start(task).await.unwrap();
    assert!(h
        .poll_for(Duration::from_millis(200))
        .await
        .unwrap()
        .is_empty());
    h.stop().await.unwrap();
}

#[tokio::test]
async fn postgres_uuid_and_json_columns_arrive_as_their_text() {
    let Some(db) = Db::postgres("postgres_uuid_and_json_columns_arrive_as_their_text").await else {
        return;
    };
    db.exec("DROP TABLE IF EXISTS docs").await;
    db.exec("CREATE TABLE docs (id INT NOT NULL PRIMARY KEY, ref UUID, body JSONB, raw JSON)")
        .await;
    db.exec(
        "INSERT INTO docs VALUES (1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"b\": [1, 2], \"a\": null}', '{\"x\":1}'), \
         (2, NULL, NULL, NULL)",
    )
    .await;
    let config = db.config(&[
        ("mode", "incrementing"),
        ("incrementing.column.name", "id"),
        ("topic.prefix", "db-"),
        ("table.whitelist", "docs"),
    ]);
    let mut h = SourceHarness::for_connector(JdbcSourceConnector::default());
    h.start(task_config(&config).await).await.unwrap();
    let got = h.poll_until(2, DEADLINE).await.unwrap();
    assert_eq!(
        field(&got[0], "ref"),
        &Value::from("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
    );
    let body: serde_json::Value =
        serde_json::from_str(field(&got[0], "body").as_str().unwrap()).unwrap();
    assert_eq!(body, serde_json::json!({"a": null, "b": [1, 2]}));
    assert_eq!(field(&got[0], "raw"), &Value::from("{\"x\":1}"));
    assert_eq!(field(&got[1], "body"), &Value::Null);
    let schema = got[0].value_schema.as_ref().unwrap();
    assert_eq!(
        schema.field("ref").unwrap().schema().ty(),
        connect_api::Type::String
    );
    h.stop().await.unwrap();
}

#[tokio::test]
async fn a_named_db_timezone_writes_and_reads_wall_times_with_daylight_saving() {
    // 2026-01-15T11:00Z is 12:00 in Paris (CET, +1); 2026-07-15T10:00Z is
    // 12:00 too (CEST, +2): a fixed offset would get one of them wrong.
    let winter = 1_768_474_800_000i64;
    let summer = 1_784_109_600_000i64;
    for db in Db::all("a_named_db_timezone_writes_and_reads_wall_times").await {
        db.exec("DROP TABLE IF EXISTS tz_events").await;
        db.exec(&format!(
            "CREATE TABLE tz_events (id BIGINT NOT NULL PRIMARY KEY, at {} NOT NULL)",
            db.timestamp_type()
        ))
        .await;
        let schema = SchemaBuilder::struct_()
            .name("Event")
            .field("id", Schema::int64())
            .field("at", connect_api::logical::timestamp_schema())
            .build()
            .unwrap();
        let records = [(1i64, winter), (2, summer)].map(|(id, ms)| {
            let mut v = Struct::new(schema.clone()).unwrap();
            v.put("id", id).unwrap();
            v.put("at", Value::Timestamp(ms)).unwrap();
            Record::new("tz_events", Some(schema.clone()), Value::Struct(v))
        });
        let zone = [("db.timezone", "Europe/Paris")];
        let mut config = db.config(&zone);
        config.insert("topics".into(), "tz_events".into());
        let mut sink = SinkHarness::for_connector(JdbcSinkConnector::default()).without_reporter();
        sink.start(config).await.unwrap();
        sink.open(&[TopicPartition::new("tz_events", 0)])
            .await
            .unwrap();
        sink.put(&sink_records(0, 0, records)).await.unwrap();
        sink.stop().await.unwrap();
        let walls: Vec<String> = db
            .texts("SELECT CAST(at AS CHAR(40)) FROM tz_events ORDER BY id")
            .await
            .into_iter()
            .map(|r| r[0].clone().unwrap().replace('T', " ")[..16].to_string())
            .collect();
        assert_eq!(
            walls,
            ["2026-01-15 12:00", "2026-07-15 12:00"],
            "{}: wall times in Paris",
            db.name
        );

        let mut config = db.config(&zone);
        for (k, v) in [
            ("mode", "incrementing"),
            ("incrementing.column.name", "id"),
            ("topic.prefix", "db-"),
            ("table.whitelist", "tz_events"),
        ] {
            config.insert(k.into(), v.into());
        }
        let mut source = SourceHarness::for_connector(JdbcSourceConnector::default());
        source.start(task_config(&config).await).await.unwrap();
        let got = source.poll_until(2, DEADLINE).await.unwrap();
        let read: Vec<&Value> = got.iter().map(|r| field(r, "at")).collect();
        assert_eq!(
            read,
            [&Value::Timestamp(winter), &Value::Timestamp(summer)],
            "{}: the same instants back",
            db.name
        );
        source.stop().await.unwrap();
    }
}

#[tokio::test]
async fn records_of_one_schema_alternating_between_topics_reach_their_own_tables() {
    for db in Db::all("records_of_one_schema_alternating_between_topics").await {
        for t in ["sink_left", "sink_right"] {
            db.exec(&format!("DROP TABLE IF EXISTS {t}")).await;
        }
        let config = db.config(&[
            ("topics", "sink_left,sink_right"),
            ("insert.mode", "upsert"),
            ("pk.mode", "record_key"),
            ("auto.create", "true"),
        ]);
        let mut h = SinkHarness::for_connector(JdbcSinkConnector::default()).without_reporter();
        h.start(config).await.unwrap();
        h.open(&[
            TopicPartition::new("sink_left", 0),
            TopicPartition::new("sink_right", 0),
        ])
        .await
        .unwrap();
        // The same schema objects for every record: only the topic tells
        // the records' tables apart.
        let (ks, vs) = (key_schema(), value_schema(false));
        let record = |topic: &str, id: i64, name: &str| {
            let mut v = Struct::new(vs.clone()).unwrap();
            v.put("id", id).unwrap();
            v.put("name", name).unwrap();
            let mut k = Struct::new(ks.clone()).unwrap();
            k.put("id", id).unwrap();
            Record::new(topic, Some(vs.clone()), Value::Struct(v))
                .with_key(Some(ks.clone()), Value::Struct(k))
        };
        let batch = sink_records(
            0,
            0,
            [
                record("sink_left", 1, "l1"),
                record("sink_left", 2, "l2"),
                record("sink_right", 3, "r3"),
                record("sink_left", 4, "l4"),
                record("sink_right", 5, "r5"),
            ],
        );
        h.put(&batch).await.unwrap();
        for (table, want) in [
            ("sink_left", vec!["1 l1", "2 l2", "4 l4"]),
            ("sink_right", vec!["3 r3", "5 r5"]),
        ] {
            let got: Vec<String> = db
                .texts(&format!(
                    "SELECT CAST(id AS CHAR(20)), name FROM {table} ORDER BY id"
                ))
                .await
                .into_iter()
                .map(|r| format!("{} {}", r[0].as_deref().unwrap(), r[1].as_deref().unwrap()))
                .collect();
            assert_eq!(got, want, "{}: {table}", db.name);
        }
        h.stop().await.unwrap();
    }
}

#[tokio::test]
async fn postgres_numeric_values_of_every_size_and_sign_read_and_write_exactly() {
    let Some(db) = Db::postgres("postgres_numeric_values_of_every_size_and_sign").await else {
        return;
    };
    let values = [
        "0.0000",
        "-1.5000",
        "0.0001",
        "-0.0001",
        "12345678901234567890.1234",
        "-9999999999999999999999999999999999.9999",
        "10000.0000",
    ];
    db.exec("DROP TABLE IF EXISTS numbers; DROP TABLE IF EXISTS numbers_copy")
        .await;
    db.exec("CREATE TABLE numbers (id INT NOT NULL PRIMARY KEY, n NUMERIC(38,4))")
        .await;
    for (i, v) in values.iter().enumerate() {
        db.exec(&format!("INSERT INTO numbers VALUES ({i}, {v})"))
            .await;
    }
    db.exec("INSERT INTO numbers VALUES (99, NULL)").await;
    let config = db.config(&[
        ("mode", "incrementing"),
        ("incrementing.column.name", "id"),
        ("topic.prefix", "db-"),
        ("table.whitelist", "numbers"),
    ]);
    let mut source = SourceHarness::for_connector(JdbcSourceConnector::default());
    source.start(task_config(&config).await).await.unwrap();
    let got = source.poll_until(values.len() + 1, DEADLINE).await.unwrap();
    source.stop().await.unwrap();
    let read: Vec<String> = got
        .iter()
        .map(|r| match field(r, "n") {
            Value::Decimal(d) => d.to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    let mut want: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    want.push("Null".into());
    assert_eq!(read, want, "read at the column's scale");

    // Written back by the sink (auto.create, the records' own schema).
    let mut sink_config = db.config(&[("auto.create", "true")]);
    sink_config.insert("topics".into(), "numbers_copy".into());
    let mut sink = SinkHarness::for_connector(JdbcSinkConnector::default()).without_reporter();
    sink.start(sink_config).await.unwrap();
    sink.open(&[TopicPartition::new("numbers_copy", 0)])
        .await
        .unwrap();
    let records = got
        .into_iter()
        .map(|r| Record::new("numbers_copy", r.value_schema.clone(), r.value.clone()));
    sink.put(&sink_records(0, 0, records)).await.unwrap();
    sink.stop().await.unwrap();
    let copied: Vec<String> = db
        .texts("SELECT COALESCE(CAST(n AS TEXT), 'Null') FROM numbers_copy ORDER BY id")
        .await
        .into_iter()
        .map(|r| r[0].clone().unwrap())
        .collect();
    assert_eq!(copied, want, "written exactly");
}

#[tokio::test]
async fn string_fields_reach_postgres_uuid_and_json_columns() {
    let Some(db) = Db::postgres("string_fields_reach_postgres_uuid_and_json_columns").await else {
        return;
    };
    db.exec("DROP TABLE IF EXISTS sink_docs").await;
    db.exec(
        "CREATE TABLE sink_docs (id BIGINT NOT NULL PRIMARY KEY, ref UUID, body JSONB, raw JSON)",
    )
    .await;
    let schema = SchemaBuilder::struct_()
        .name("Doc")
        .field("id", Schema::int64())
        .field("ref", Schema::optional_string())
        .field("body", Schema::optional_string())
        .field("raw", Schema::optional_string())
        .build()
        .unwrap();
    let key = SchemaBuilder::struct_()
        .field("id", Schema::int64())
        .build()
        .unwrap();
    let doc = |id: i64, r: Option<&str>, body: Option<&str>| {
        let mut v = Struct::new(schema.clone()).unwrap();
        v.put("id", id).unwrap();
        for (f, x) in [("ref", r), ("body", body), ("raw", body)] {
            if let Some(x) = x {
                v.put(f, x).unwrap();
            }
        }
        let mut k = Struct::new(key.clone()).unwrap();
        k.put("id", id).unwrap();
        Record::new("sink_docs", Some(schema.clone()), Value::Struct(v))
            .with_key(Some(key.clone()), Value::Struct(k))
    };
    let mut config = db.config(&[("insert.mode", "upsert"), ("pk.mode", "record_key")]);
    config.insert("topics".into(), "sink_docs".into());
    let mut h = SinkHarness::for_connector(JdbcSinkConnector::default()).without_reporter();
    h.start(config).await.unwrap();
    h.open(&[TopicPartition::new("sink_docs", 0)])
        .await
        .unwrap();
    let batch = sink_records(
        0,
        0,
        [
            doc(
                1,
                Some("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
                Some("{\"a\": [1, 2]}"),
            ),
            doc(2, None, None),
            doc(3, Some("00000000-0000-0000-0000-000000000003"), Some("{}")),
        ],
    );
    h.put(&batch).await.unwrap();
    // Redelivered: the upsert writes the same rows again.
    h.put(&batch).await.unwrap();
    h.stop().await.unwrap();
    let rows = db
        .texts(
            "SELECT CAST(id AS TEXT), ref::text, body->>'a', raw::text FROM sink_docs ORDER BY id",
        )
        .await;
    assert_eq!(
        rows,
        vec![
            vec![
                Some("1".to_string()),
                Some("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11".to_string()),
                Some("[1, 2]".to_string()),
                Some("{\"a\": [1, 2]}".to_string()),
            ],
            vec![Some("2".to_string()), None, None, None],
            vec![
                Some("3".to_string()),
                Some("00000000-0000-0000-0000-000000000003".to_string()),
                None,
                Some("{}".to_string()),
            ],
        ]
    );
}
