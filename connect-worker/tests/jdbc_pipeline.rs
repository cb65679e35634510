//! The JDBC pipeline end to end with the real `connect-standalone`: a
//! table read by the JDBC source, through Kafka and an SMT (RegexRouter),
//! written by the JDBC sink, and the two tables equal at the end. Once as
//! the quickstart ships it (SQLite to SQLite on the embedded Kafka: no
//! server), once from a real PostgreSQL to a real MariaDB.

use std::path::Path;
use std::process::{Child, Command, Stdio};

mod common;

use common::{repo_file, unique_suffix, worker_config};

/// A running `connect-standalone`, killed on drop; its log goes to a file.
struct Worker(Child);

impl Worker {
    fn start(dir: &Path, props: &Path) -> Worker {
        let log = std::fs::File::create(dir.join("worker.log")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_connect-standalone"))
            .arg(props)
            .arg(dir.join("connect-jdbc-source.properties"))
            .arg(dir.join("connect-jdbc-sink.properties"))
            .current_dir(dir)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start connect-standalone");
        Worker(child)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Rows of a query, each column as text (trimmed), on a database URL
/// sqlx understands.
fn texts(url: &str, sql: &str) -> Vec<Vec<Option<String>>> {
    use sqlx::Row;
    macro_rules! rows {
        ($pool:ty) => {{
            let pool = <$pool>::connect(url).await.unwrap();
            let rows = match sqlx::query(sql).fetch_all(&pool).await {
                Ok(rows) => rows,
                // The sink has not created the table yet.
                Err(_) => Vec::new(),
            };
            let out = rows
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
                .collect();
            pool.close().await;
            out
        }};
    }
    block_on(async {
        if url.starts_with("postgres") {
            rows!(sqlx::PgPool)
        } else if url.starts_with("mysql") {
            rows!(sqlx::MySqlPool)
        } else {
            rows!(sqlx::SqlitePool)
        }
    })
}

fn exec(url: &str, sql: &str) {
    macro_rules! run {
        ($pool:ty) => {{
            let pool = <$pool>::connect(url).await.unwrap();
            sqlx::raw_sql(sql)
                .execute(&pool)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
            pool.close().await;
        }};
    }
    block_on(async {
        if url.starts_with("postgres") {
            run!(sqlx::PgPool)
        } else if url.starts_with("mysql") {
            run!(sqlx::MySqlPool)
        } else {
            run!(sqlx::SqlitePool)
        }
    })
}

/// Waits until `copy` (on `to`) has exactly the rows of `source` (on `from`).
fn wait_equal(
    from: &str,
    source: &str,
    to: &str,
    copy: &str,
    dir: &Path,
) -> Vec<Vec<Option<String>>> {
    let want = texts(from, source);
    assert!(!want.is_empty(), "the source query found no rows: {source}");
    let start = std::time::Instant::now();
    loop {
        let last = texts(to, copy);
        if last == want {
            return last;
        }
        if start.elapsed() > common::DEADLINE * 2 {
            let log = std::fs::read_to_string(dir.join("worker.log")).unwrap_or_default();
            panic!("the copy never matched:\nwant {want:?}\ngot  {last:?}\nworker log:\n{log}");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
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
    let _worker = Worker::start(d, &props);
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
    let (Some(pg), Some(maria)) = (
        connect_test_support::real_database("JDBC_TEST_POSTGRES_URL", test),
        connect_test_support::real_database("JDBC_TEST_MARIADB_URL", test),
    ) else {
        return;
    };
    let pg_url = pg.replace("jdbc:postgresql://", "postgres://postgres@");
    let maria_url = maria.replace("jdbc:mariadb://", "mysql://connect:connect@");
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
    let (source_name, sink_name) = (format!("src-{table}"), format!("sink-{table}"));
    connector_configs(
        d,
        &[
            ("name", &source_name),
            ("connection.url", &pg),
            ("connection.user", "postgres"),
            ("mode", "timestamp+incrementing"),
            ("timestamp.column.name", "placed"),
            ("table.whitelist", &table),
        ],
        &[
            ("name", &sink_name),
            ("topics", &topic_copy),
            ("connection.url", &maria),
            ("connection.user", "connect"),
            ("connection.password", "connect"),
        ],
    );
    let _worker = Worker::start(d, &props);
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
