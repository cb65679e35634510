//! The PostgreSQL CDC connector (`connect-postgres`) in the real
//! `connect-standalone` on the real broker: a pipeline from PostgreSQL
//! through Kafka and an SMT into MariaDB by the JDBC sink (inserts,
//! updates and deletes end in equal tables), and the fault drills
//! (PostgreSQL crashing, the worker killed, the broker restarted under
//! load: nothing lost, duplicates counted).

use std::path::{Path, PathBuf};

mod common;
mod databases;

use common::{unique_suffix, Standalone};
use databases::{exec, exec_until_done, texts, PrivateDatabases, Writer};

/// `host`, `port` and `db` of a `jdbc:postgresql://host:port/db` URL.
fn pg_parts(url: &str) -> (String, String, String) {
    let rest = url.trim_start_matches("jdbc:postgresql://");
    let (hostport, db) = rest.split_once('/').expect("host:port/db");
    let (host, port) = hostport.split_once(':').expect("host:port");
    (host.into(), port.into(), db.into())
}

/// A connector properties file in `dir` capturing `public.<table>` of the
/// PostgreSQL at `pg`, with `extra` keys on top.
fn cdc_properties(dir: &Path, pg: &str, table: &str, extra: &[(&str, &str)]) -> PathBuf {
    let (host, port, db) = pg_parts(pg);
    let mut text = format!(
        "name=cdc-{table}\n\
         connector.class=io.debezium.connector.postgresql.PostgresConnector\n\
         database.hostname={host}\ndatabase.port={port}\ndatabase.user=postgres\ndatabase.dbname={db}\n\
         topic.prefix={table}\nslot.name={table}\npublication.name={table}\n\
         publication.autocreate.mode=filtered\ntable.include.list=public.{table}\n\
         status.update.interval.ms=500\n"
    );
    for (k, v) in extra {
        text.push_str(&format!("{k}={v}\n"));
    }
    let path = dir.join("cdc.properties");
    std::fs::write(&path, text).unwrap();
    path
}

/// The `after.id` of a change event's JSON (creates, updates and
/// snapshot reads).
fn after_id(value: &str) -> Option<i64> {
    serde_json::from_str::<serde_json::Value>(value).ok()?["payload"]["after"]["id"].as_i64()
}

/// Reads `topic` until each of `1..=rows` has been seen as an `after.id`:
/// the distinct ids, and how many events came beyond one per row.
fn ids_on_topic(bootstrap: &str, topic: &str, rows: i64) -> (Vec<i64>, usize) {
    let what = format!("every id of 1..={rows}");
    let values = common::topic_values_until(bootstrap, topic, &what, |values| {
        let mut ids: Vec<i64> = values.iter().filter_map(|v| after_id(v)).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len() as i64 >= rows
    });
    let mut ids: Vec<i64> = values.iter().filter_map(|v| after_id(v)).collect();
    let read = ids.len();
    ids.sort_unstable();
    ids.dedup();
    let twice = read - ids.len();
    (ids, twice)
}

/// The quickstart of connectors/postgres/README.md as shipped: the
/// standalone worker on its embedded Kafka with
/// config/connect-postgres-source.properties, `PGPORT` in the
/// environment.
#[test]
fn the_cdc_quickstart_streams_the_orders_table_as_shipped() {
    let test = "the_cdc_quickstart_streams_the_orders_table_as_shipped";
    let Some(pg) = connect_test_support::real_database("JDBC_TEST_POSTGRES_URL", test) else {
        return;
    };
    let (_, port, _) = pg_parts(&pg);
    let pg_url = pg.replace("jdbc:postgresql://", "postgres://postgres@");
    exec_until_done(
        &pg_url,
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'quickstart'",
    );
    exec(
        &pg_url,
        "DROP TABLE IF EXISTS orders; CREATE TABLE orders (id INT PRIMARY KEY, item TEXT, qty INT); \
         INSERT INTO orders VALUES (1, 'apple', 3), (2, 'pear', 1)",
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let props = common::worker_config(d, None);
    let worker = Standalone::start_with_env(
        d,
        &props,
        &[&common::repo_file(
            "config/connect-postgres-source.properties",
        )],
        &[("PGPORT", &port)],
    );
    let bootstrap = common::wait_for("the embedded Kafka's address in the log", || {
        let log = std::fs::read_to_string(d.join("worker.log")).ok()?;
        let at = log.find("bootstrap.servers=")?;
        let rest = &log[at + "bootstrap.servers=".len()..];
        Some(
            rest.split(|c: char| c.is_whitespace() || c == '"')
                .next()?
                .to_string(),
        )
    });
    // The changes come once the snapshot is on the topic: made earlier,
    // before the connector's slot exists, they would be in the snapshot
    // (three `r` events, as Debezium gives then too), not streamed.
    common::topic_values(&bootstrap, "quickstart.public.orders", 2);
    exec(
        &pg_url,
        "UPDATE orders SET qty = 5 WHERE id = 1; INSERT INTO orders VALUES (3, 'fig', 2)",
    );
    let values = common::topic_values(&bootstrap, "quickstart.public.orders", 4);
    let ops: Vec<(String, i64)> = values
        .iter()
        .filter_map(|v| serde_json::from_str::<serde_json::Value>(v).ok())
        .map(|v| {
            let p = &v["payload"];
            (
                p["op"].as_str().unwrap_or("?").to_string(),
                p["after"]["id"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        ops,
        [
            ("r".into(), 1),
            ("r".into(), 2),
            ("u".into(), 1),
            ("c".into(), 3)
        ],
        "snapshot, then the changes"
    );
    drop(worker);
    exec_until_done(&pg_url, "SELECT pg_drop_replication_slot('quickstart')");
}

#[test]
fn postgres_changes_reach_mariadb_through_kafka_and_an_smt_with_deletes() {
    let test = "postgres_changes_reach_mariadb_through_kafka_and_an_smt_with_deletes";
    let (Some(pg), Some(maria), Some(bootstrap)) = (
        connect_test_support::real_database("JDBC_TEST_POSTGRES_URL", test),
        connect_test_support::real_database("JDBC_TEST_MARIADB_URL", test),
        connect_test_support::real_bootstrap(test),
    ) else {
        return;
    };
    let pg_url = pg.replace("jdbc:postgresql://", "postgres://postgres@");
    let maria_url = maria.replace("jdbc:mariadb://", "mysql://connect:connect@");
    let table = unique_suffix("cdcpipe").replace('-', "_");
    let copy = format!("{table}_copy");
    exec(
        &pg_url,
        &format!(
            "CREATE TABLE {table} (id BIGINT PRIMARY KEY, customer TEXT NOT NULL, amount NUMERIC(10,2)); \
             INSERT INTO {table} SELECT g, 'c' || g, g * 1.5 FROM generate_series(1, 50) g"
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let props = common::worker_config(d, Some(&bootstrap));
    // The change event's `after` is the row; a delete's is null, which
    // the JDBC sink turns into a DELETE by the record key.
    let source = cdc_properties(
        d,
        &pg,
        &table,
        &[
            ("transforms", "after,route"),
            (
                "transforms.after.type",
                "org.apache.kafka.connect.transforms.ExtractField$Value",
            ),
            ("transforms.after.field", "after"),
            (
                "transforms.route.type",
                "org.apache.kafka.connect.transforms.RegexRouter",
            ),
            ("transforms.route.regex", ".*"),
            ("transforms.route.replacement", &copy),
        ],
    );
    let sink = d.join("sink.properties");
    std::fs::write(
        &sink,
        format!(
            "name=sink-{table}\nconnector.class=io.confluent.connect.jdbc.JdbcSinkConnector\n\
             topics={copy}\nconnection.url={maria}\nconnection.user=connect\nconnection.password=connect\n\
             insert.mode=upsert\npk.mode=record_key\ndelete.enabled=true\nauto.create=true\n"
        ),
    )
    .unwrap();
    let worker = Standalone::start(d, &props, &[&source, &sink]);
    // Streamed changes on top of the snapshot: updates, deletes, inserts,
    // a transaction.
    exec(
        &pg_url,
        &format!(
            "UPDATE {table} SET customer = 'changed' WHERE id % 7 = 0; \
             DELETE FROM {table} WHERE id % 10 = 0; \
             BEGIN; INSERT INTO {table} SELECT g, 'late' || g, NULL FROM generate_series(51, 80) g; \
             UPDATE {table} SET amount = 0 WHERE id = 51; COMMIT"
        ),
    );
    let all =
        format!("SELECT CAST(id AS CHAR(20)), customer, CAST(amount AS CHAR(20)) FROM {table}");
    let rows = databases::wait_equal(
        &pg_url,
        &all,
        &maria_url,
        &all.replace(&format!("FROM {table}"), &format!("FROM {copy}")),
        d,
    );
    assert_eq!(rows.len(), 80 - 5, "80 rows, 5 deleted");
    drop(worker);
    exec_until_done(
        &pg_url,
        &format!("SELECT pg_drop_replication_slot('{table}')"),
    );
}

/// PostgreSQL crashes, the worker is killed with SIGKILL and the broker
/// restarts while rows stream in: every row reaches the topic; the only
/// duplicates are events sent but not yet committed when the worker died.
#[test]
fn postgres_crash_worker_kill_9_and_broker_restart_lose_no_change() {
    let test = "postgres_crash_worker_kill_9_and_broker_restart_lose_no_change";
    // The shared servers' variables say this machine can run the servers.
    let (Some(_), Some(_)) = (
        connect_test_support::real_database("JDBC_TEST_POSTGRES_URL", test),
        connect_test_support::real_bootstrap(test),
    ) else {
        return;
    };
    let dbs = PrivateDatabases::start();
    let broker = common::OwnBroker::start(&[]);
    let bootstrap = broker.printed("bootstrap.servers");
    let pg_url = dbs
        .postgres
        .replace("jdbc:postgresql://", "postgres://postgres@");
    let table = unique_suffix("cdcdrill").replace('-', "_");
    exec(
        &pg_url,
        &format!("CREATE TABLE {table} (id BIGINT PRIMARY KEY, customer TEXT NOT NULL)"),
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let props = common::worker_config(d, Some(&bootstrap));
    let source = cdc_properties(d, &dbs.postgres, &table, &[]);
    const ROWS: i64 = 600;
    let writer = Writer::start(&pg_url, &table, ROWS, std::time::Duration::from_millis(40));
    let worker = Standalone::start(d, &props, &[&source]);
    writer.wait_rows(150);
    dbs.crash("postgres");
    writer.wait_rows(300);
    drop(worker); // SIGKILL
    let _worker = Standalone::start(d, &props, &[&source]);
    writer.wait_rows(450);
    broker.restart();
    writer.join();
    let topic = format!("{table}.public.{table}");
    let (ids, twice) = ids_on_topic(&bootstrap, &topic, ROWS);
    assert_eq!(
        ids,
        (1..=ROWS).collect::<Vec<_>>(),
        "every row on the topic"
    );
    let confirmed = texts(
        &pg_url,
        &format!("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '{table}'"),
    );
    let log = std::fs::read_to_string(d.join("worker.log")).unwrap_or_default();
    for line in log
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .take(30)
    {
        eprintln!("{test}: worker log: {line}");
    }
    eprintln!(
        "{test}: {twice} of {ROWS} changes were produced twice (sent but not committed when the \
         worker was killed); slot confirmed at {confirmed:?}"
    );
}
