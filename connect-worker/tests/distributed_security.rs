//! Security end to end on a real Kafka broker: `connect-distributed`
//! processes configured with Kafka's worker keys (`security.protocol`,
//! `sasl.*`, `ssl.*`) join one group, and a FileStreamSource and a
//! FileStreamSink move lines through the broker, over each protocol:
//! - `SASL_PLAINTEXT` with `PLAIN`;
//! - `SASL_SSL` with `SCRAM-SHA-256` on one worker and `SCRAM-SHA-512` on
//!   the other, trusting a PEM CA file;
//! - `SSL` with client certificates (the listener requires them): a
//!   PKCS#12 keystore on one worker, a PEM file with an encrypted key on
//!   the other;
//! - `SASL_SSL` with `SCRAM-SHA-512` again, one worker being Kafka Connect
//!   4.4's own (Java) and one ours, on the same properties file (skipped,
//!   loudly, without Java; required with `CONFORMANCE_REQUIRE_JAVA`).
//!
//! Then workers that must not start fail fast with an error naming what to
//! fix: a wrong SCRAM password, a truststore that does not hold the
//! broker's CA, no client certificate where the broker requires one.
//!
//! The group connection (our own Kafka protocol client) and librdkafka's
//! data clients both take these keys; a worker moves lines only if both
//! work. Runs its own broker (`tools/real-kafka/broker.sh start --sasl
//! --tls`), only when `KAFKA_BOOTSTRAP_SERVERS` says real-broker tests are
//! wanted.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod common;

use common::{free_port, real_bootstrap, try_curl, unique_suffix, Node, OwnBroker};
use serde_json::Value;

const LINES: usize = 300;

/// A worker's properties: `security` holds its security lines.
fn write_props(
    dir: &Path,
    name: &str,
    bootstrap: &str,
    group: &str,
    port: u16,
    security: &str,
) -> PathBuf {
    let path = dir.join(format!("{name}.properties"));
    std::fs::write(
        &path,
        format!(
            "bootstrap.servers={bootstrap}\ngroup.id={group}\n{security}\n\
             config.storage.topic=configs{group}\noffset.storage.topic=offsets{group}\nstatus.storage.topic=status{group}\n\
             config.storage.replication.factor=1\noffset.storage.replication.factor=1\nstatus.storage.replication.factor=1\n\
             offset.storage.partitions=5\nstatus.storage.partitions=3\n\
             key.converter=org.apache.kafka.connect.json.JsonConverter\nvalue.converter=org.apache.kafka.connect.json.JsonConverter\n\
             offset.flush.interval.ms=500\nlisteners=http://127.0.0.1:{port}\n\
             rest.advertised.host.name=127.0.0.1\nrest.advertised.port={port}\n\
             session.timeout.ms=6000\nheartbeat.interval.ms=1000\nscheduled.rebalance.max.delay.ms=3000\n"
        ),
    )
    .unwrap();
    path
}

fn wait<T>(nodes: &[&Node], what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(v) = check() {
            return v;
        }
        if Instant::now() > deadline {
            let mut report = format!("timed out waiting for {what}\n");
            for (i, n) in nodes.iter().enumerate() {
                let text = n.log_text();
                let tail: Vec<&str> = text.lines().rev().take(40).collect();
                report.push_str(&format!("--- worker {i} log tail ---\n"));
                for l in tail.into_iter().rev() {
                    report.push_str(l);
                    report.push('\n');
                }
            }
            panic!("{report}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Two workers, one group, through `bootstrap` only, each with its own
/// security lines: a source and a sink move `LINES` lines.
/// Which implementation a worker runs.
#[derive(Clone, Copy)]
enum Kind<'a> {
    Ours,
    /// Kafka Connect 4.4's Java worker, from this `tools/connect-java`.
    Java(&'a Path),
}

/// `security` as a Kafka Connect user writes it for a Java worker: the
/// worker's keys, and the same for its connectors' producers, consumers
/// and admins (Java's workers do not pass theirs on; ours do, and take
/// the prefixed keys too).
fn for_every_client(security: &str) -> String {
    let mut all = security.to_string();
    for prefix in ["producer.", "consumer.", "admin."] {
        for line in security.lines() {
            all.push_str(&format!("\n{prefix}{line}"));
        }
    }
    all
}

fn two_workers_move_lines(dir: &Path, scenario: &str, bootstrap: &str, workers: [(Kind, &str); 2]) {
    let group = unique_suffix(scenario);
    let input: String = (0..LINES)
        .map(|i| format!("{scenario} line {i}\n"))
        .collect();
    let input_file = dir.join(format!("{scenario}-in.txt"));
    let output_file = dir.join(format!("{scenario}-out.txt"));
    std::fs::write(&input_file, &input).unwrap();
    let nodes: Vec<Node> = workers
        .iter()
        .enumerate()
        .map(|(i, (kind, security))| {
            let port = free_port();
            let name = format!("{scenario}-worker-{i}");
            let props = write_props(dir, &name, bootstrap, &group, port, security);
            match kind {
                Kind::Ours => Node::spawn(dir, &props, &dir.join(format!("{name}.log")), port),
                Kind::Java(project) => {
                    let logs = dir.join(&name);
                    std::fs::create_dir_all(&logs).unwrap();
                    Node {
                        port,
                        child: Some(common::spawn_java_connect(project, &props, &logs)),
                        log: logs.join("connect.log"),
                    }
                }
            }
        })
        .collect();
    let all: Vec<&Node> = nodes.iter().collect();
    for n in &nodes {
        wait(&all, "the worker's REST API", || {
            try_curl(&n.url(), "GET", "/", "")
                .ok()
                .filter(|(s, _)| *s == 200)
        });
    }
    wait(&all, "both workers joined the group", || {
        nodes
            .iter()
            .all(|n| {
                let log = n.log_text();
                // Ours, and Java's WorkerCoordinator.
                log.contains("joined the Connect group")
                    || log.contains("Joined group at generation")
            })
            .then_some(())
    });
    let topic = format!("lines{group}");
    for (name, config) in [
        (
            "source",
            serde_json::json!({"connector.class": "FileStreamSource", "file": input_file, "topic": topic}),
        ),
        (
            "sink",
            serde_json::json!({"connector.class": "FileStreamSink", "file": output_file, "topics": topic}),
        ),
    ] {
        let body = serde_json::json!({"name": name, "config": config}).to_string();
        // 409 while the group has no leader yet: ask again.
        wait(&all, &format!("creating {name}"), || {
            match try_curl(&nodes[1].url(), "POST", "/connectors", &body) {
                Ok((201, _)) => Some(()),
                Ok((409, _)) | Err(_) => None,
                Ok((s, v)) => panic!("{scenario}: creating {name}: {s} {v}"),
            }
        });
    }
    let expected: Vec<String> = (0..LINES).map(|i| format!("{scenario} line {i}")).collect();
    wait(&all, "every line in the sink file", || {
        let got = std::fs::read_to_string(&output_file).unwrap_or_default();
        let got: std::collections::BTreeSet<&str> = got.lines().collect();
        expected
            .iter()
            .all(|l| got.contains(l.as_str()))
            .then_some(())
    });
    // Both workers are members of one group: every worker sees both
    // connectors, whichever runs them.
    for n in &nodes {
        let (status, list) = try_curl(&n.url(), "GET", "/connectors", "").unwrap();
        assert_eq!(status, 200);
        let mut names: Vec<String> = list
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        names.sort();
        assert_eq!(names, ["sink", "source"], "{scenario}");
    }
    let (_, status) = try_curl(&nodes[0].url(), "GET", "/connectors/source/status", "").unwrap();
    assert_eq!(
        status["connector"]["state"],
        Value::from("RUNNING"),
        "{scenario}: {status}"
    );
    // Where the units ran, for the log: both workers take part.
    let mut placed = Vec::new();
    for name in ["source", "sink"] {
        let (_, s) = try_curl(
            &nodes[0].url(),
            "GET",
            &format!("/connectors/{name}/status"),
            "",
        )
        .unwrap();
        let tasks: Vec<String> = s["tasks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| t["worker_id"].as_str().unwrap_or("?").to_string())
            .collect();
        placed.push(format!(
            "{name} on {} (tasks on {tasks:?})",
            s["connector"]["worker_id"].as_str().unwrap_or("?")
        ));
    }
    let workers: Vec<String> = nodes.iter().map(Node::worker_id).collect();
    eprintln!(
        "{scenario}: {LINES} lines moved end to end by workers {workers:?}: {}",
        placed.join(", ")
    );
}

/// A worker that must not start: it exits non-zero, and its error output
/// holds every `needle` and none of `secrets`.
fn worker_refuses_to_start(
    dir: &Path,
    scenario: &str,
    bootstrap: &str,
    security: &str,
    needles: &[&str],
    secrets: &[&str],
) {
    let name = format!("{scenario}-refused");
    let props = write_props(
        dir,
        &name,
        bootstrap,
        &unique_suffix(scenario),
        free_port(),
        security,
    );
    let log = dir.join(format!("{name}.log"));
    let mut node = Node::spawn(dir, &props, &log, 0);
    let child = node.child.as_mut().expect("just started");
    let deadline = Instant::now() + Duration::from_secs(90);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "{scenario}: the worker is still running after 90 s:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!code.success(), "{scenario}: exit {code:?}\n{stderr}");
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "{scenario}: no `{needle}` in:\n{stderr}"
        );
    }
    for secret in secrets {
        assert!(
            !stderr.contains(secret),
            "{scenario}: `{secret}` shown in:\n{stderr}"
        );
    }
    let last = stderr.lines().last().unwrap_or_default();
    eprintln!("{scenario}: exit {code:?}: {last}");
}

fn jaas(module: &str, user: &str, password: &str) -> String {
    format!(
        "org.apache.kafka.common.security.{module} required username=\"{user}\" password=\"{password}\";"
    )
}

#[test]
fn workers_over_sasl_plain_scram_and_mutual_tls_on_real_kafka() {
    let test = "distributed_security::workers_over_sasl_plain_scram_and_mutual_tls_on_real_kafka";
    if real_bootstrap(test).is_none() {
        return;
    }
    let broker = OwnBroker::start(&["--sasl", "--tls"]);
    let printed = |key: &str| broker.printed(key);
    let sasl = printed("sasl.bootstrap.servers");
    let ssl = printed("ssl.bootstrap.servers");
    let sasl_ssl = printed("sasl_ssl.bootstrap.servers");
    let tls = PathBuf::from(printed("tls.dir"));
    eprintln!("listeners: SASL_PLAINTEXT {sasl}, SSL {ssl}, SASL_SSL {sasl_ssl}");
    let dir = tempfile::tempdir().unwrap();
    let tls_file = |f: &str| tls.join(f).display().to_string();
    // Kafka's PEM keystore: one file with the key (here encrypted) and
    // the certificate.
    let bundle = dir.path().join("client-bundle.pem");
    std::fs::write(
        &bundle,
        [
            std::fs::read(tls.join("client-encrypted.key")).unwrap(),
            std::fs::read(tls.join("client.pem")).unwrap(),
        ]
        .concat(),
    )
    .unwrap();

    let plain = |password: &str| {
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={}",
            jaas("plain.PlainLoginModule", "alice", password)
        )
    };
    let scram = |mechanism: &str, password: &str, ca: &str| {
        format!(
            "security.protocol=SASL_SSL\nsasl.mechanism={mechanism}\nsasl.jaas.config={}\n\
             ssl.truststore.type=PEM\nssl.truststore.location={}",
            jaas("scram.ScramLoginModule", "alice", password),
            tls_file(ca)
        )
    };
    // Type given on one worker, read from the extensions on the other.
    let mtls_pkcs12 = format!(
        "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={}\n\
         ssl.keystore.type=PKCS12\nssl.keystore.location={}\nssl.keystore.password=client-p12-secret",
        tls_file("ca.pem"),
        tls_file("client.p12")
    );
    let mtls_pem = format!(
        "security.protocol=SSL\nssl.truststore.location={}\n\
         ssl.keystore.location={}\nssl.key.password=client-key-secret",
        tls_file("ca.pem"),
        bundle.display()
    );

    let d = dir.path();
    let ours = Kind::Ours;
    two_workers_move_lines(
        d,
        "plain",
        &sasl,
        [
            (ours, &plain("alice-secret")),
            (ours, &plain("alice-secret")),
        ],
    );
    two_workers_move_lines(
        d,
        "scram",
        &sasl_ssl,
        [
            (ours, &scram("SCRAM-SHA-256", "alice-secret", "ca.pem")),
            (ours, &scram("SCRAM-SHA-512", "alice-secret", "ca.pem")),
        ],
    );
    two_workers_move_lines(d, "mtls", &ssl, [(ours, &mtls_pkcs12), (ours, &mtls_pem)]);
    // The same file for Kafka Connect's own worker and ours, in one group:
    // Java reads the PEM truststore and the SCRAM line as we do.
    match common::java_project() {
        Ok(project) => {
            let both = for_every_client(&scram("SCRAM-SHA-512", "alice-secret", "ca.pem"));
            two_workers_move_lines(
                d,
                "java-scram",
                &sasl_ssl,
                [(Kind::Java(&project), &both), (ours, &both)],
            );
        }
        Err(why) => {
            assert!(
                std::env::var_os("CONFORMANCE_REQUIRE_JAVA").is_none(),
                "CONFORMANCE_REQUIRE_JAVA is set but Kafka Connect's Java worker is not available: {why}"
            );
            eprintln!(
                "SKIPPED distributed_security (Java worker over SASL_SSL/SCRAM): Kafka Connect 4.4's Java worker is not available: {why}"
            );
        }
    }

    worker_refuses_to_start(
        d,
        "plain-wrong-password",
        &sasl,
        &plain("not-the-password"),
        &["sasl.jaas.config"],
        &["not-the-password"],
    );
    worker_refuses_to_start(
        d,
        "scram-wrong-password",
        &sasl_ssl,
        &scram("SCRAM-SHA-512", "not-the-password", "ca.pem"),
        &["SCRAM-SHA-512", "sasl.jaas.config"],
        &["not-the-password"],
    );
    worker_refuses_to_start(
        d,
        "wrong-truststore",
        &sasl_ssl,
        &scram("SCRAM-SHA-256", "alice-secret", "other-ca.pem"),
        &["certificate", "ssl.truststore"],
        &["alice-secret"],
    );
    worker_refuses_to_start(
        d,
        "no-client-certificate",
        &ssl,
        &format!(
            "security.protocol=SSL\nssl.truststore.location={}",
            tls_file("ca.pem")
        ),
        &["TLS handshake", "ssl.keystore"],
        &[],
    );
    worker_refuses_to_start(
        d,
        "jks-truststore",
        &ssl,
        "security.protocol=SSL\nssl.truststore.location=/etc/kafka/truststore.jks\nssl.truststore.password=changeit",
        &["ssl.truststore.type", "keytool"],
        &["changeit"],
    );
    drop(broker);
}
