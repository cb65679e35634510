//! The JDBC pipeline end to end with the real `connect-standalone`: a
//! table read by the JDBC source, through Kafka and an SMT (RegexRouter),
//! written by the JDBC sink, and the two tables equal at the end. Once as
//! the quickstart ships it (SQLite to SQLite on the embedded Kafka: no
//! server), once from a real PostgreSQL to a real MariaDB.

use std::path::Path;

mod common;
mod databases;

use common::{repo_file, unique_suffix, worker_config, Standalone};
use databases::{exec, texts, wait_equal, PrivateDatabases, Writer};

/// `connect-standalone` running the JDBC pair copied to `dir`.
fn start_worker(dir: &Path, props: &Path) -> Standalone {
    Standalone::start(
        dir,
        props,
        &[
            &dir.join("connect-jdbc-source.properties"),
            &dir.join("connect-jdbc-sink.properties"),
        ],
    )
}

/// The shipped JDBC connector configs copied to `dir`, with the keys in
/// `source` and `sink` replaced (or added).
fn connector_configs(dir: &Path, source: &[(&str, &str)], sink: &[(&str, &str)]) {
    for (name, changes) in [
        ("connect-jdbc-source.properties", source),
        ("connect-jdbc-sink.properties", sink),
    ] {
        let shipped = std::fs::read_to_string(repo_file(&format!("config/{name}"))).unwrap();
        let mut text = String::new();
        for line in shipped.lines() {
            let changed = line
                .split_once('=')
                .is_some_and(|(k, _)| changes.iter().any(|(c, _)| *c == k));
            if !changed {
                text.push_str(line);
                text.push('\n');
            }
        }
        for (k, v) in changes {
            text.push_str(&format!("{k}={v}\n"));
        }
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// The shipped JDBC configs rewritten to copy the PostgreSQL table `table`
/// to MariaDB's `<table>_copy` (the name the shipped RegexRouter gives
/// it), with `source_extra` and `sink_extra` on top.
fn pg_to_mariadb_configs(
    dir: &Path,
    (pg, maria): (&str, &str),
    table: &str,
    source_extra: &[(&str, &str)],
    sink_extra: &[(&str, &str)],
) {
    let (source_name, sink_name, copy) = (
        format!("src-{table}"),
        format!("sink-{table}"),
        format!("{table}_copy"),
    );
    let mut source = vec![
        ("name", source_name.as_str()),
        ("connection.url", pg),
        ("connection.user", "postgres"),
        ("table.whitelist", table),
    ];
    source.extend_from_slice(source_extra);
    let mut sink = vec![
        ("name", sink_name.as_str()),
        ("topics", copy.as_str()),
        ("connection.url", maria),
        ("connection.user", "connect"),
        ("connection.password", "connect"),
    ];
    sink.extend_from_slice(sink_extra);
    connector_configs(dir, &source, &sink);
}

/// The shared real servers a pipeline test runs on: their JDBC URLs (for
/// the connectors) and sqlx URLs (for the test's own checks).
struct Real {
    pg: String,
    maria: String,
    pg_url: String,
    maria_url: String,
}

/// [`Real`] from the environment, or `None` after the SKIPPED lines.
fn real_databases(test: &str) -> Option<Real> {
    let pg = connect_test_support::real_database("JDBC_TEST_POSTGRES_URL", test);
    let maria = connect_test_support::real_database("JDBC_TEST_MARIADB_URL", test);
    let (pg, maria) = (pg?, maria?);
    Some(Real {
        pg_url: pg.replace("jdbc:postgresql://", "postgres://postgres@"),
        maria_url: maria.replace("jdbc:mariadb://", "mysql://connect:connect@"),
        pg,
        maria,
    })
}

#[test]
fn the_jdbc_quickstart_copies_a_sqlite_table_through_kafka_as_shipped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let shop = format!("sqlite://{}?mode=rwc", d.join("shop.db").display());
    let copy = format!("sqlite://{}?mode=rwc", d.join("copy.db").display());
    exec(
        &shop,
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, amount REAL)",
    );
    exec(
        &shop,
        "INSERT INTO orders VALUES (1, 'ada', 12.5), (2, 'grace', NULL), (3, 'linus', 7.25)",
    );
    let props = worker_config(d, None);
    connector_configs(d, &[], &[]);
    let _worker = start_worker(d, &props);
    let source = "SELECT id, customer, amount FROM orders ORDER BY id";
    let target = "SELECT id, customer, amount FROM orders_copy ORDER BY id";
    let rows = wait_equal(&shop, source, &copy, target, d);
    assert_eq!(rows.len(), 3);
    // Rows added while it runs follow.
    exec(&shop, "INSERT INTO orders VALUES (4, 'barbara', 99.0)");
    assert_eq!(wait_equal(&shop, source, &copy, target, d).len(), 4);
}

#[test]
fn postgres_to_mariadb_through_kafka_and_an_smt_ends_with_equal_tables() {
    let test = "postgres_to_mariadb_through_kafka_and_an_smt_ends_with_equal_tables";
    let Some(Real {
        pg,
        maria,
        pg_url,
        maria_url,
    }) = real_databases(test)
    else {
        return;
    };
    let table = unique_suffix("pipeline").replace('-', "_");
    exec(
        &pg_url,
        &format!(
            "CREATE TABLE {table} (id BIGINT PRIMARY KEY, customer TEXT NOT NULL, amount NUMERIC(10,2), \
             placed TIMESTAMP(3) NOT NULL, shipped BOOLEAN)"
        ),
    );
    exec(
        &pg_url,
        &format!(
            "INSERT INTO {table} VALUES (1, 'ada', 12.50, '2024-05-01 10:00:00.123', true), \
             (2, 'grace', NULL, '2024-05-01 10:00:00.123', NULL), (3, 'linus', 7.25, '2024-05-02 08:30:00', false)"
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let props = worker_config(d, None);
    let topic_copy = format!("{table}_copy");
    pg_to_mariadb_configs(
        d,
        (&pg, &maria),
        &table,
        &[
            ("mode", "timestamp+incrementing"),
            ("timestamp.column.name", "placed"),
        ],
        &[],
    );
    let _worker = start_worker(d, &props);
    let cols = "CAST(id AS CHAR(20)), customer, CAST(amount AS CHAR(20)), PLACED, \
                CAST(CASE WHEN shipped THEN 1 WHEN NOT shipped THEN 0 END AS CHAR(1))";
    // The timestamps as both print them, to the millisecond.
    let source = format!("SELECT {cols} FROM {table} ORDER BY id")
        .replace("PLACED", "to_char(placed, 'YYYY-MM-DD HH24:MI:SS.MS')");
    let target = format!("SELECT {cols} FROM {topic_copy} ORDER BY id").replace(
        "PLACED",
        "LEFT(DATE_FORMAT(placed, '%Y-%m-%d %H:%i:%s.%f'), 23)",
    );
    let rows = wait_equal(&pg_url, &source, &maria_url, &target, d);
    assert_eq!(rows.len(), 3);
    exec(
        &pg_url,
        &format!("INSERT INTO {table} VALUES (4, 'barbara', 99.00, '2024-05-03 00:00:00', true)"),
    );
    assert_eq!(
        wait_equal(&pg_url, &source, &maria_url, &target, d).len(),
        4
    );
}

/// kill -9 of the worker while rows stream from PostgreSQL to MariaDB on
/// the real broker: after a restart the tables end equal (the sink's
/// upsert absorbs what is delivered twice), and every row is on the topic
/// (the source repeats at most what it had not committed).
#[test]
fn kill_9_mid_stream_ends_with_equal_tables_on_the_real_broker() {
    let test = "kill_9_mid_stream_ends_with_equal_tables_on_the_real_broker";
    let (
        Some(Real {
            pg,
            maria,
            pg_url,
            maria_url,
        }),
        Some(bootstrap),
    ) = (
        real_databases(test),
        connect_test_support::real_bootstrap(test),
    )
    else {
        return;
    };
    let table = unique_suffix("drill").replace('-', "_");
    let copy = format!("{table}_copy");
    exec(
        &pg_url,
        &format!("CREATE TABLE {table} (id BIGINT PRIMARY KEY, customer TEXT NOT NULL)"),
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let props = common::worker_config_with_session(d, Some(&bootstrap), 6000);
    pg_to_mariadb_configs(
        d,
        (&pg, &maria),
        &table,
        &[("poll.interval.ms", "100")],
        &[],
    );
    const ROWS: i64 = 600;
    let writer = {
        let pg_url = pg_url.clone();
        let table = table.clone();
        std::thread::spawn(move || {
            for start in (1..=ROWS).step_by(20) {
                let values: Vec<String> = (start..start + 20)
                    .map(|i| format!("({i}, 'c{i}')"))
                    .collect();
                exec(
                    &pg_url,
                    &format!("INSERT INTO {table} VALUES {}", values.join(", ")),
                );
                std::thread::sleep(std::time::Duration::from_millis(60));
            }
        })
    };
    let worker = start_worker(d, &props);
    let count = format!("SELECT CAST(COUNT(*) AS CHAR(20)) FROM {copy}");
    let copied = |url: &str| {
        texts(url, &count)
            .first()
            .and_then(|r| r[0].as_deref().and_then(|n| n.parse::<i64>().ok()))
            .unwrap_or(0)
    };
    let start = std::time::Instant::now();
    while copied(&maria_url) < 100 {
        assert!(
            start.elapsed() < common::DEADLINE * 2,
            "the sink never reached 100 rows"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(worker); // SIGKILL
    let _worker = start_worker(d, &props);
    writer.join().unwrap();
    let all = format!("SELECT CAST(id AS CHAR(20)), customer FROM {table} ORDER BY id");
    let rows = wait_equal(
        &pg_url,
        &all,
        &maria_url,
        &all.replace(&format!("FROM {table}"), &format!("FROM {copy}")),
        d,
    );
    assert_eq!(rows.len(), ROWS as usize);
    // Read until every id is seen: the duplicates make the topic longer.
    let mut want = ROWS as usize;
    let (ids, twice) = loop {
        let mut ids: Vec<i64> = common::topic_values(&bootstrap, &copy, want)
            .iter()
            .filter_map(|v| serde_json::from_str::<serde_json::Value>(v).ok())
            .filter_map(|v| v["payload"]["id"].as_i64())
            .collect();
        ids.sort_unstable();
        let read = ids.len();
        ids.dedup();
        if ids.len() == ROWS as usize || read < want {
            let twice = read - ids.len();
            break (ids, twice);
        }
        want = read + (ROWS as usize - ids.len());
    };
    assert_eq!(
        ids,
        (1..=ROWS).collect::<Vec<_>>(),
        "every row on the topic"
    );
    eprintln!(
        "{test}: {twice} of {ROWS} rows were produced twice (the source's uncommitted window)"
    );
}

/// A row the target database refuses goes to the worker's dead letter
/// queue topic (errors.tolerance=all) and every other row flows on.
#[test]
fn a_row_mariadb_refuses_goes_to_the_dead_letter_queue_while_the_rest_flows() {
    let test = "a_row_mariadb_refuses_goes_to_the_dead_letter_queue_while_the_rest_flows";
    let (
        Some(Real {
            pg,
            maria,
            pg_url,
            maria_url,
        }),
        Some(bootstrap),
    ) = (
        real_databases(test),
        connect_test_support::real_bootstrap(test),
    )
    else {
        return;
    };
    let table = unique_suffix("poison").replace('-', "_");
    let copy = format!("{table}_copy");
    let dlq = format!("{table}_dlq");
    exec(
        &pg_url,
        &format!("CREATE TABLE {table} (id BIGINT PRIMARY KEY, amount NUMERIC(10,2) NOT NULL)"),
    );
    exec(
        &pg_url,
        &format!("INSERT INTO {table} VALUES (1, 1.00), (2, -2.00), (3, 3.00)"),
    );
    // The target refuses negative amounts.
    exec(
        &maria_url,
        &format!("CREATE TABLE {copy} (id BIGINT PRIMARY KEY, amount DECIMAL(10,2) NOT NULL, CHECK (amount >= 0))"),
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let props = common::worker_config_with_session(d, Some(&bootstrap), 6000);
    pg_to_mariadb_configs(
        d,
        (&pg, &maria),
        &table,
        &[("poll.interval.ms", "100")],
        &[
            ("errors.tolerance", "all"),
            ("errors.deadletterqueue.topic.name", &dlq),
            ("errors.deadletterqueue.topic.replication.factor", "1"),
            ("errors.deadletterqueue.context.headers.enable", "true"),
        ],
    );
    let _worker = start_worker(d, &props);
    let ids = format!("SELECT CAST(id AS CHAR(20)) FROM {copy} ORDER BY id");
    let start = std::time::Instant::now();
    loop {
        let got: Vec<String> = texts(&maria_url, &ids)
            .into_iter()
            .filter_map(|r| r[0].clone())
            .collect();
        if got == ["1", "3"] {
            break;
        }
        assert!(
            start.elapsed() < common::DEADLINE * 2,
            "rows 1 and 3 never arrived: {got:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let dead = common::topic_values(&bootstrap, &dlq, 1);
    let poison: serde_json::Value = serde_json::from_str(&dead[0]).unwrap();
    assert_eq!(
        poison["payload"]["id"], 2,
        "the refused row is the one on the DLQ: {poison}"
    );
    // Rows after the poison flow too.
    exec(&pg_url, &format!("INSERT INTO {table} VALUES (4, 4.00)"));
    let start = std::time::Instant::now();
    while texts(&maria_url, &ids).len() < 3 {
        assert!(
            start.elapsed() < common::DEADLINE * 2,
            "row 4 never arrived"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Both databases crash and restart while rows stream from one to the
/// other: the source resumes from its position, the sink retries its
/// batch, and the tables end equal.
#[test]
fn both_databases_crashing_under_load_end_with_equal_tables() {
    let test = "both_databases_crashing_under_load_end_with_equal_tables";
    // The shared servers' variables say this machine can run the servers.
    let (Some(_), Some(bootstrap)) = (
        connect_test_support::real_database("JDBC_TEST_POSTGRES_URL", test),
        connect_test_support::real_bootstrap(test),
    ) else {
        return;
    };
    let dbs = PrivateDatabases::start();
    let pg_url = dbs
        .postgres
        .replace("jdbc:postgresql://", "postgres://postgres@");
    let maria_url = dbs
        .mariadb
        .replace("jdbc:mariadb://", "mysql://connect:connect@");
    let table = unique_suffix("crash").replace('-', "_");
    let copy = format!("{table}_copy");
    exec(
        &pg_url,
        &format!("CREATE TABLE {table} (id BIGINT PRIMARY KEY, customer TEXT NOT NULL)"),
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let props = common::worker_config_with_session(d, Some(&bootstrap), 6000);
    pg_to_mariadb_configs(
        d,
        (&dbs.postgres, &dbs.mariadb),
        &table,
        &[("poll.interval.ms", "100")],
        &[],
    );
    const ROWS: i64 = 600;
    let writer = Writer::start(&pg_url, &table, ROWS, std::time::Duration::from_millis(40));
    let _worker = start_worker(d, &props);
    writer.wait_rows(200);
    dbs.crash("postgres");
    writer.wait_rows(400);
    dbs.crash("mariadb");
    writer.join();
    let all = format!("SELECT CAST(id AS CHAR(20)), customer FROM {table}");
    let rows = wait_equal(
        &pg_url,
        &all,
        &maria_url,
        &all.replace(&format!("FROM {table}"), &format!("FROM {copy}")),
        d,
    );
    assert_eq!(rows.len(), ROWS as usize);
    let log = std::fs::read_to_string(d.join("worker.log")).unwrap_or_default();
    let warnings = log.lines().filter(|l| l.contains("WARN")).count();
    eprintln!("{test}: equal after both crashes; {warnings} warnings in the worker log");
}
