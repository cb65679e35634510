//! Real databases for the pipeline tests: SQL through sqlx on a URL, and
//! private servers (tools/databases) a drill may crash.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use crate::common::{self, repo_file};

pub(crate) fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Rows of a query, each column as text (trimmed), on a database URL
/// sqlx understands.
pub(crate) fn texts(url: &str, sql: &str) -> Vec<Vec<Option<String>>> {
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

pub(crate) fn exec(url: &str, sql: &str) {
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

/// Private PostgreSQL and MariaDB servers (tools/databases) that a drill
/// may crash; stopped on drop.
pub(crate) struct PrivateDatabases {
    dir: tempfile::TempDir,
    pub(crate) postgres: String,
    pub(crate) mariadb: String,
}

impl PrivateDatabases {
    pub(crate) fn start() -> PrivateDatabases {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(repo_file("tools/databases/databases.sh"))
            .args(["start", "--dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "databases.sh start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let env = String::from_utf8_lossy(&out.stdout).into_owned();
        let url = |var: &str| {
            env.lines()
                .find_map(|l| l.strip_prefix(var))
                .map(str::to_string)
                .unwrap_or_else(|| panic!("no {var} in {env}"))
        };
        PrivateDatabases {
            postgres: url("JDBC_TEST_POSTGRES_URL="),
            mariadb: url("JDBC_TEST_MARIADB_URL="),
            dir,
        }
    }

    pub(crate) fn crash(&self, server: &str) {
        let out = Command::new(repo_file("tools/databases/databases.sh"))
            .args(["crash", server, "--dir"])
            .arg(self.dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "crash {server}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for PrivateDatabases {
    fn drop(&mut self) {
        let _ = Command::new(repo_file("tools/databases/databases.sh"))
            .args(["stop", "--dir"])
            .arg(self.dir.path())
            .output();
    }
}

/// `exec` that retries while the database is restarting.
pub(crate) fn exec_until_done(url: &str, sql: &str) {
    let start = std::time::Instant::now();
    loop {
        let done = block_on(async {
            let pool = sqlx::PgPool::connect(url).await.ok()?;
            let r = sqlx::raw_sql(sql).execute(&pool).await.ok();
            pool.close().await;
            r
        });
        if done.is_some() {
            return;
        }
        assert!(start.elapsed() < common::DEADLINE, "{sql} never succeeded");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Waits until `copy` (on `to`) has exactly the rows of `source` (on
/// `from`), compared as sorted lists (the databases order text and
/// numbers differently).
pub(crate) fn wait_equal(
    from: &str,
    source: &str,
    to: &str,
    copy: &str,
    dir: &Path,
) -> Vec<Vec<Option<String>>> {
    let mut want = texts(from, source);
    want.sort();
    assert!(!want.is_empty(), "the source query found no rows: {source}");
    let start = std::time::Instant::now();
    loop {
        let mut last = texts(to, copy);
        last.sort();
        if last == want {
            return last;
        }
        if start.elapsed() > common::DEADLINE * 2 {
            let log = std::fs::read_to_string(dir.join("worker.log")).unwrap_or_default();
            let missing: Vec<_> = want.iter().filter(|r| !last.contains(r)).take(10).collect();
            let extra: Vec<_> = last.iter().filter(|r| !want.contains(r)).take(10).collect();
            panic!(
                "the copy never matched: {} rows wanted, {} found; first missing {missing:?}; \
                 first unexpected {extra:?}\nworker log:\n{log}",
                want.len(),
                last.len()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Inserts rows `(i, 'c<i>')` for i in `1..=rows` into `table` in
/// statements of 20, `pause` apart, from a thread, retrying while the
/// database restarts; tells how far it got.
pub(crate) struct Writer {
    thread: std::thread::JoinHandle<()>,
    progress: std::sync::Arc<std::sync::atomic::AtomicI64>,
}

impl Writer {
    pub(crate) fn start(url: &str, table: &str, rows: i64, pause: std::time::Duration) -> Writer {
        let progress = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
        let (url, table, done) = (url.to_string(), table.to_string(), progress.clone());
        let thread = std::thread::spawn(move || {
            for start in (1..=rows).step_by(20) {
                let values: Vec<String> = (start..start + 20)
                    .map(|i| format!("({i}, 'c{i}')"))
                    .collect();
                exec_until_done(
                    &url,
                    &format!("INSERT INTO {table} VALUES {}", values.join(", ")),
                );
                done.store(start + 19, std::sync::atomic::Ordering::SeqCst);
                std::thread::sleep(pause);
            }
        });
        Writer { thread, progress }
    }

    /// Waits until row `n` is written.
    pub(crate) fn wait_rows(&self, n: i64) {
        let start = std::time::Instant::now();
        while self.progress.load(std::sync::atomic::Ordering::SeqCst) < n {
            assert!(
                start.elapsed() < common::DEADLINE * 2,
                "the writer never reached row {n}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Waits until every row is written.
    pub(crate) fn join(self) {
        self.thread.join().unwrap();
    }
}
