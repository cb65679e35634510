//! Helpers the workspace's own tests and tools share, so each is written
//! once: a free TCP port for a worker to listen on, the body of a
//! chunked HTTP/1.1 response, and the real broker a test needs. Not published: plugin authors get their test
//! support from `connect-testkit`.

use std::hash::{BuildHasher, RandomState};
use std::io::Write;
use std::net::TcpListener;

/// A port on 127.0.0.1 free now, for a worker (ours or Java's) to listen
/// on. Picked below Linux's ephemeral range (32768 and up): a port the
/// kernel hands out for `:0` can be taken, before the worker binds it, by
/// one of the many outgoing connections of a busy machine running brokers
/// and tests at once. `None` when no port in 20000-31999 is free.
///
/// ```
/// let port = connect_test_support::free_port().unwrap();
/// assert!((20_000..32_000).contains(&port));
/// ```
pub fn free_port() -> Option<u16> {
    let seed = RandomState::new().hash_one(std::time::SystemTime::now());
    (0..1000u64)
        .map(|i| 20_000 + (seed.wrapping_add(i.wrapping_mul(7_919)) % 12_000) as u16)
        .find(|port| TcpListener::bind(("127.0.0.1", *port)).is_ok())
}

/// The body of a `Transfer-Encoding: chunked` HTTP/1.1 response (what
/// follows the blank line after the headers): the chunks joined, up to the
/// last chunk or the first malformed or short one.
///
/// ```
/// assert_eq!(connect_test_support::dechunk("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"), "hello world");
/// assert_eq!(connect_test_support::dechunk("ff\r\nshort"), "");
/// ```
pub fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        let Some(chunk) = rest.get(..n).filter(|_| n > 0) else {
            break;
        };
        out.push_str(chunk);
        s = rest.get(n + 2..).unwrap_or("");
    }
    out
}

/// The real broker's bootstrap servers (`KAFKA_BOOTSTRAP_SERVERS`), or
/// `None` after telling the terminal that `test` did not run. Written to
/// the stderr handle directly: libtest captures only the print macros, so
/// the SKIPPED line shows in every `cargo test` run.
///
/// ```
/// // Without the variable a test returns early, and says so.
/// if std::env::var_os("KAFKA_BOOTSTRAP_SERVERS").is_none() {
///     assert_eq!(connect_test_support::real_bootstrap("doc"), None);
/// }
/// ```
pub fn real_bootstrap(test: &str) -> Option<String> {
    match std::env::var("KAFKA_BOOTSTRAP_SERVERS") {
        Ok(servers) if !servers.trim().is_empty() => Some(servers),
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: needs a real Kafka broker; start one with \
                 tools/real-kafka/broker.sh start and set KAFKA_BOOTSTRAP_SERVERS"
            );
            None
        }
    }
}

/// A real database server for a connector test: the JDBC URL in `var`
/// (`JDBC_TEST_POSTGRES_URL` or `JDBC_TEST_MARIADB_URL`, which
/// `tools/databases/databases.sh start` prints and `.ci/run` sets), or
/// `None` after telling the terminal that `test` did not run.
///
/// ```
/// if std::env::var_os("JDBC_TEST_POSTGRES_URL").is_none() {
///     assert_eq!(connect_test_support::real_database("JDBC_TEST_POSTGRES_URL", "doc"), None);
/// }
/// ```
pub fn real_database(var: &str, test: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: needs a real database; start PostgreSQL and MariaDB with \
                 tools/databases/databases.sh start and set the {var} it prints"
            );
            None
        }
    }
}
