//! `mock-kafka`: librdkafka's mock Kafka cluster on 127.0.0.1, for local runs,
//! CI and any Kafka client, with nothing to install.
//!
//! ```text
//! mock-kafka [--brokers N] [--topic NAME:PARTITIONS]...
//! ```
//!
//! Prints one line `bootstrap.servers=HOST:PORT[,HOST:PORT...]` on stdout when
//! ready and serves until SIGINT or SIGTERM. Bad arguments exit with status 2.

use std::io::Write as _;
use std::process::ExitCode;

use connect_rdkafka::MockKafka;

const USAGE: &str = "usage: mock-kafka [--brokers N] [--topic NAME:PARTITIONS]...
  --brokers N                 number of mock brokers (default 1)
  --topic NAME:PARTITIONS     create a topic before serving (repeatable)";

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
struct Args {
    brokers: i32,
    topics: Vec<(String, i32)>,
}

/// Parse the arguments after the program name; errors name the argument.
fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Args>, String> {
    let mut parsed = Args {
        brokers: 1,
        topics: Vec::new(),
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |flag: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--brokers" => {
                let v = value("--brokers")?;
                parsed.brokers = match v.parse::<i32>() {
                    Ok(n) if (1..=64).contains(&n) => n,
                    _ => return Err(format!("--brokers '{v}' is not a number from 1 to 64")),
                };
            }
            "--topic" => {
                let v = value("--topic")?;
                let topic = v
                    .rsplit_once(':')
                    .and_then(|(name, p)| Some((name, p.parse::<i32>().ok()?)))
                    .filter(|(name, p)| !name.is_empty() && *p >= 1)
                    .map(|(name, p)| (name.to_string(), p))
                    .ok_or_else(|| {
                        format!("--topic '{v}' is not NAME:PARTITIONS with PARTITIONS at least 1")
                    })?;
                parsed.topics.push(topic);
            }
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    Ok(Some(parsed))
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            eprintln!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("mock-kafka: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let topics: Vec<(&str, i32)> = args.topics.iter().map(|(n, p)| (n.as_str(), *p)).collect();
    let kafka = match MockKafka::start(args.brokers, &topics) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("mock-kafka: cannot start the mock cluster: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "mock-kafka: WARN this is librdkafka's mock cluster: data is kept in memory and lost on exit, \
         and each partition silently keeps only about the last 5 MiB; use enough partitions"
    );
    // Handlers first: a client that signals as soon as it reads the ready
    // line must not find the default action (kill) still in place.
    let signals = match Signals::register() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mock-kafka: cannot wait for signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    if writeln!(out, "bootstrap.servers={}", kafka.bootstrap_servers())
        .and_then(|()| out.flush())
        .is_err()
    {
        eprintln!("mock-kafka: cannot write to stdout");
        return ExitCode::FAILURE;
    }
    drop(out);
    match signals.wait() {
        Ok(()) => {
            drop(kafka);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mock-kafka: cannot wait for signals: {e}");
            ExitCode::FAILURE
        }
    }
}

/// SIGINT and SIGTERM handlers, installed by [`Signals::register`].
struct Signals {
    runtime: tokio::runtime::Runtime,
    #[cfg(unix)]
    streams: [tokio::signal::unix::Signal; 2],
}

impl Signals {
    /// Install the handlers now (a signal from here on is caught).
    fn register() -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let _in_runtime = runtime.enter();
            let streams = [
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
            ];
            Ok(Signals { runtime, streams })
        }
        #[cfg(not(unix))]
        Ok(Signals { runtime })
    }

    /// Block until SIGINT or SIGTERM.
    fn wait(self) -> std::io::Result<()> {
        #[cfg(unix)]
        {
            let [mut int, mut term] = self.streams;
            self.runtime.block_on(async {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            });
            Ok(())
        }
        #[cfg(not(unix))]
        self.runtime.block_on(tokio::signal::ctrl_c())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Option<Args>, String> {
        parse(list.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_brokers_and_repeated_topics() {
        let parsed = args(&["--brokers", "3", "--topic", "a:4", "--topic=b.c:1"])
            .unwrap()
            .unwrap();
        assert_eq!(
            parsed,
            Args {
                brokers: 3,
                topics: vec![("a".into(), 4), ("b.c".into(), 1)]
            }
        );
        assert_eq!(args(&[]).unwrap().unwrap().brokers, 1);
        assert_eq!(args(&["--help"]).unwrap(), None);
    }

    #[test]
    fn errors_name_the_argument() {
        for (list, needle) in [
            (&["--brokers", "0"][..], "--brokers"),
            (&["--brokers"][..], "--brokers"),
            (&["--topic", "nopartitions"][..], "--topic"),
            (&["--topic", "t:0"][..], "--topic"),
            (&["--topic", ":3"][..], "--topic"),
            (&["--bogus"][..], "--bogus"),
        ] {
            let err = args(list).unwrap_err();
            assert!(err.contains(needle), "{list:?}: {err}");
        }
    }
}
