//! The worker's own REST API secured as an operator secures Kafka
//! Connect's, driven from outside with `curl` and certificates the test
//! makes with the `openssl` command:
//! - https listeners beside http ones (`listeners`, `listeners.https.ssl.*`),
//!   the `/admin` endpoints moved off them (`admin.listeners=`);
//! - Kafka's `BasicAuthSecurityRestExtension` with a Java user's JAAS and
//!   password files, named in `KAFKA_OPTS`, read unchanged;
//! - a secret given through the file config provider, in no REST body, no
//!   log line and (distributed) no config-topic record;
//! - an override the client policy refuses answered 400 naming the key;
//! - `curl` without the CA fails the handshake.
//!
//! The standalone case runs on the embedded broker; the two-worker
//! distributed case (requests forwarded between workers over https) needs
//! a real broker and says so loudly without one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;

use common::{free_port, real_bootstrap, topic_values, unique_suffix, wait_for, Node};

/// The secret the file config provider hands the connectors.
const SECRET: &str = "s3cr3t-token-5f1c9e";
/// Basic-auth users, in Java's password file format.
const USER: &str = "alice";
const PASSWORD: &str = "alice-rest-password";

/// Runs `openssl` with `args` in `dir`; the test cannot go on if it fails.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl (apt install openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA and a worker certificate for 127.0.0.1 signed by it, made with
/// the `openssl` command: `ca.pem`, and `worker-keystore.pem` (the key,
/// then the chain: Kafka's PEM keystore layout).
fn make_certificates(dir: &Path) {
    std::fs::write(
        dir.join("ext.cnf"),
        "[ca]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n\
         [worker]\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n\
         extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    for key in ["ca.key", "worker.key"] {
        openssl(
            dir,
            &[
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-out",
                key,
            ],
        );
    }
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-x509",
            "-key",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=rest test CA",
            "-config",
            "ext.cnf",
            "-extensions",
            "ca",
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-key",
            "worker.key",
            "-out",
            "worker.csr",
            "-subj",
            "/CN=localhost",
            "-config",
            "ext.cnf",
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "worker.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-extensions",
            "worker",
            "-out",
            "worker.pem",
        ],
    );
    let keystore = [
        std::fs::read_to_string(dir.join("worker.key")).unwrap(),
        std::fs::read_to_string(dir.join("worker.pem")).unwrap(),
        std::fs::read_to_string(dir.join("ca.pem")).unwrap(),
    ]
    .concat();
    std::fs::write(dir.join("worker-keystore.pem"), keystore).unwrap();
}

/// A Java user's basic-auth files: the JAAS file and the password file it
/// names, in Kafka's documented formats. Returns the `KAFKA_OPTS` that
/// names the JAAS file.
fn java_auth_files(dir: &Path) -> String {
    let passwords = dir.join("connect.password");
    std::fs::write(
        &passwords,
        format!("{USER}: {PASSWORD}\nbob: bob-password\n"),
    )
    .unwrap();
    let jaas = dir.join("connect_jaas.conf");
    std::fs::write(
        &jaas,
        format!(
            "KafkaConnect {{\n  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required\n  file=\"{}\";\n}};\n",
            passwords.display()
        ),
    )
    .unwrap();
    format!("-Djava.security.auth.login.config={}", jaas.display())
}

/// The worker keys every case shares: an https listener and an http one
/// (both authenticated), `/admin` disabled, basic auth, the file config
/// provider, and a policy that allows no client override.
fn rest_security_props(dir: &Path, https_port: u16, http_port: u16, client_auth: bool) -> String {
    let client_auth = if client_auth { "required" } else { "none" };
    format!(
        "listeners=https://127.0.0.1:{https_port},http://127.0.0.1:{http_port}\n\
         listeners.https.ssl.keystore.type=PEM\n\
         listeners.https.ssl.keystore.location={keystore}\n\
         listeners.https.ssl.truststore.type=PEM\n\
         listeners.https.ssl.truststore.location={ca}\n\
         listeners.https.ssl.client.auth={client_auth}\n\
         rest.advertised.listener=https\n\
         admin.listeners=\n\
         rest.extension.classes=org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension\n\
         config.providers=file\n\
         config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider\n\
         connector.client.config.override.policy=None\n",
        keystore = dir.join("worker-keystore.pem").display(),
        ca = dir.join("ca.pem").display(),
    )
}

/// `curl` with `args`: (exit code, HTTP status, body). Exit 0 with status
/// 0 never happens: a failed handshake is a non-zero exit.
fn curl(args: &[&str]) -> (i32, u16, String) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "30", "-w", "\n%{http_code}"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run curl (apt install curl)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (
        out.status.code().unwrap_or(-1),
        code.trim().parse().unwrap_or(0),
        body.to_string(),
    )
}

/// `curl`'s arguments to trust the test CA and show the worker's
/// certificate as its own (for listeners that require one).
fn tls_args(dir: &Path) -> Vec<String> {
    let file = |name: &str| dir.join(name).to_string_lossy().into_owned();
    [
        "--cacert",
        &file("ca.pem"),
        "--cert",
        &file("worker.pem"),
        "--key",
        &file("worker.key"),
    ]
    .map(String::from)
    .to_vec()
}

/// A `curl` as `user` (`name:password`) with [`tls_args`]: (exit code,
/// status, body).
fn try_curl_as(
    dir: &Path,
    user: &str,
    method: &str,
    url: &str,
    body: Option<&str>,
) -> (i32, u16, String) {
    let mut args = tls_args(dir);
    args.extend(
        [
            "-u",
            user,
            "-X",
            method,
            url,
            "-H",
            "Content-Type: application/json",
        ]
        .map(String::from),
    );
    if let Some(body) = body {
        args.extend(["-d".to_string(), body.to_string()]);
    }
    curl(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// [`try_curl_as`], which must reach the worker: (status, body).
fn curl_as(dir: &Path, user: &str, method: &str, url: &str, body: Option<&str>) -> (u16, String) {
    let (exit, status, body) = try_curl_as(dir, user, method, url, body);
    assert_eq!(exit, 0, "curl {method} {url} failed: {body}");
    (status, body)
}

/// The checks on one worker's listeners, as a user sees them;
/// `client_auth`: the https listener requires a client certificate.
fn check_listeners(dir: &Path, https: &str, http: &str, client_auth: bool) {
    let me = format!("{USER}:{PASSWORD}");
    // Without the CA, curl refuses the worker's certificate (exit 60).
    let (exit, _, _) = curl(&["-u", &me, &format!("{https}/connectors")]);
    assert_eq!(exit, 60, "curl without the CA must fail the TLS handshake");
    let tls = tls_args(dir);
    let tls: Vec<&str> = tls.iter().map(String::as_str).collect();
    // tls[..2] is the CA alone, without the client certificate.
    let (exit, status, body) =
        curl(&[&tls[..2], &["-u", &me, &format!("{https}/connectors")]].concat());
    if client_auth {
        // Without a client certificate the listener refuses the
        // connection, credentials or not.
        assert_ne!(
            exit, 0,
            "no client certificate, and served: {status} {body}"
        );
    } else {
        assert_eq!((exit, status), (0, 200), "{body}");
    }
    // No or wrong credentials: 401 with Kafka's challenge.
    let (exit, status, headers) =
        curl(&[&tls[..], &["-i", &format!("{https}/connectors")]].concat());
    assert_eq!((exit, status), (0, 401));
    assert!(
        headers
            .to_ascii_lowercase()
            .contains("www-authenticate: basic realm=\"kafkaconnect\""),
        "{headers}"
    );
    let (status, _) = curl_as(
        dir,
        &format!("{USER}:wrong"),
        "GET",
        &format!("{https}/connectors"),
        None,
    );
    assert_eq!(status, 401);
    let (status, body) = curl_as(dir, &me, "GET", &format!("{https}/"), None);
    assert_eq!(status, 200, "{body}");
    // The http listener serves the same API, authenticated too.
    let (_, status, _) = curl(&[&format!("{http}/connectors")]);
    assert_eq!(status, 401);
    let (status, _) = curl_as(dir, &me, "GET", &format!("{http}/connectors"), None);
    assert_eq!(status, 200);
    // admin.listeners= (empty): no /admin endpoints on these listeners.
    let (status, _) = curl_as(dir, &me, "GET", &format!("{https}/admin/loggers"), None);
    assert_eq!(status, 404);
}

/// A sink whose config carries the secret through the file provider, and
/// a connector whose producer override the policy refuses.
fn check_secret_and_policy(dir: &Path, url: &str, topic: &str) -> String {
    let me = format!("{USER}:{PASSWORD}");
    let secrets = dir.join("secrets.properties");
    std::fs::write(&secrets, format!("api.token={SECRET}\n")).unwrap();
    let reference = format!("${{file:{}:api.token}}", secrets.display());
    let out = dir.join("sink.out");
    let config = serde_json::json!({
        "connector.class": "FileStreamSink",
        "topics": topic,
        "file": out.to_str().unwrap(),
        "api.token": reference,
    });
    let body = serde_json::json!({"name": "secret-sink", "config": config}).to_string();
    let (status, reply) = curl_as(dir, &me, "POST", &format!("{url}/connectors"), Some(&body));
    assert_eq!(status, 201, "{reply}");
    let running = format!("{url}/connectors/secret-sink/status");
    wait_for("the sink's task to run", || {
        let (_, body) = curl_as(dir, &me, "GET", &running, None);
        body.contains("\"tasks\":[{")
            .then_some(())
            .filter(|_| body.contains("RUNNING"))
    });
    // Every body a user can read shows the reference, never the value.
    let mut seen = String::new();
    for path in [
        "/connectors/secret-sink",
        "/connectors/secret-sink/config",
        "/connectors/secret-sink/tasks",
        "/connectors/secret-sink/status",
        "/connectors?expand=status&expand=info",
        "/metrics",
    ] {
        let (status, body) = curl_as(dir, &me, "GET", &format!("{url}{path}"), None);
        assert_eq!(status, 200, "{path}: {body}");
        assert!(!body.contains(SECRET), "{path} shows the secret: {body}");
        seen.push_str(&body);
    }
    assert!(seen.contains(&reference), "the reference is shown: {seen}");
    // The policy refuses an override, naming the key.
    let refused = serde_json::json!({"name": "override", "config": {
        "connector.class": "FileStreamSource",
        "topic": topic,
        "file": dir.join("none.txt").to_str().unwrap(),
        "producer.override.bootstrap.servers": "elsewhere:9092",
    }})
    .to_string();
    let (status, body) = curl_as(
        dir,
        &me,
        "POST",
        &format!("{url}/connectors"),
        Some(&refused),
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("producer.override.bootstrap.servers"),
        "{body}"
    );
    reference
}

fn read_log(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

#[test]
fn standalone_over_https_with_basic_auth_keeps_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    make_certificates(d);
    let kafka_opts = java_auth_files(d);
    let (https_port, http_port) = (free_port(), free_port());
    let worker = d.join("worker.properties");
    std::fs::write(
        &worker,
        format!(
            "key.converter=org.apache.kafka.connect.json.JsonConverter\n\
             value.converter=org.apache.kafka.connect.json.JsonConverter\n\
             offset.storage.file.filename={}\n{}",
            d.join("offsets").display(),
            rest_security_props(d, https_port, http_port, false)
        ),
    )
    .unwrap();
    let log = d.join("worker.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_connect-standalone"))
        .arg(&worker)
        .current_dir(d)
        .env("KAFKA_OPTS", &kafka_opts)
        .env("RUST_LOG", "debug,librdkafka=info,rdkafka=info,hyper=info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let https = format!("https://127.0.0.1:{https_port}");
    let http = format!("http://127.0.0.1:{http_port}");
    let me = format!("{USER}:{PASSWORD}");
    wait_for("the worker to answer over https", || {
        let (exit, status, _) = try_curl_as(d, &me, "GET", &format!("{https}/health"), None);
        assert!(
            child.try_wait().unwrap().is_none(),
            "the worker exited: {}",
            read_log(&log)
        );
        (exit == 0 && status == 200).then_some(())
    });
    check_listeners(d, &https, &http, false);
    check_secret_and_policy(d, &https, "secret-topic");
    let _ = child.kill();
    let _ = child.wait();
    let text = read_log(&log);
    assert!(
        text.contains("REST API listening on https://127.0.0.1"),
        "{text}"
    );
    assert!(
        !text.contains(SECRET),
        "a log line shows the secret:\n{text}"
    );
}

/// The distributed worker properties of one of two workers.
fn distributed_props(
    dir: &Path,
    name: &str,
    bootstrap: &str,
    group: &str,
    ports: (u16, u16),
) -> PathBuf {
    let path = dir.join(format!("{name}.properties"));
    std::fs::write(
        &path,
        format!(
            "bootstrap.servers={bootstrap}\ngroup.id={group}\n\
             config.storage.topic=configs{group}\noffset.storage.topic=offsets{group}\nstatus.storage.topic=status{group}\n\
             config.storage.replication.factor=1\noffset.storage.replication.factor=1\nstatus.storage.replication.factor=1\n\
             offset.storage.partitions=5\nstatus.storage.partitions=3\n\
             key.converter=org.apache.kafka.connect.json.JsonConverter\nvalue.converter=org.apache.kafka.connect.json.JsonConverter\n\
             rest.advertised.host.name=127.0.0.1\nrest.advertised.port={}\n\
             session.timeout.ms=6000\nheartbeat.interval.ms=1000\nscheduled.rebalance.max.delay.ms=3000\n{}",
            ports.0,
            rest_security_props(dir, ports.0, ports.1, true)
        ),
    )
    .unwrap();
    path
}

#[test]
fn distributed_over_https_forwards_between_workers_and_keeps_secrets_on_real_kafka() {
    let test = "rest_security::distributed_over_https_forwards_between_workers_and_keeps_secrets_on_real_kafka";
    let Some(bootstrap) = real_bootstrap(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    make_certificates(d);
    let kafka_opts = java_auth_files(d);
    let group = unique_suffix("rest-tls");
    let me = format!("{USER}:{PASSWORD}");
    let mut nodes = Vec::new();
    for name in ["a", "b"] {
        let ports = (free_port(), free_port());
        let props = distributed_props(d, name, &bootstrap, &group, ports);
        // KAFKA_OPTS names the JAAS file, as for Java's worker.
        std::env::set_var("KAFKA_OPTS", &kafka_opts);
        let node = Node::spawn(d, &props, &d.join(format!("{name}.log")), ports.0);
        nodes.push((node, ports));
    }
    let https = |i: usize| format!("https://127.0.0.1:{}", nodes[i].1 .0);
    let http = |i: usize| format!("http://127.0.0.1:{}", nodes[i].1 .1);
    for (i, (node, _)) in nodes.iter().enumerate() {
        wait_for("both workers to answer over https", || {
            assert!(node.alive(), "a worker exited: {}", node.log_text());
            let url = format!("{}/connectors", https(i));
            let (exit, status, _) = try_curl_as(d, &me, "GET", &url, None);
            (exit == 0 && status == 200).then_some(())
        });
    }
    for i in 0..2 {
        check_listeners(d, &https(i), &http(i), true);
    }
    // Which one leads: the other forwards the writes to it over https.
    let joined = |i: usize, leader: bool| {
        nodes[i].0.log_text().lines().any(|l| {
            l.contains("joined the Connect group") && l.contains(&format!("leader={leader}"))
        })
    };
    let follower = wait_for("one leader and one follower", || {
        (0..2).find(|&i| joined(i, false) && !joined(i, true) && joined(1 - i, true))
    });
    let reference = check_secret_and_policy(d, &https(follower), &format!("secret{group}"));
    // Every record of the config topic shows the reference, none the value.
    let configs = topic_values(&bootstrap, &format!("configs{group}"), 3).concat();
    assert!(configs.contains("api.token"), "{configs}");
    assert!(
        !configs.contains(SECRET),
        "the config topic holds the secret: {configs}"
    );
    assert!(configs.contains(&reference), "{configs}");
    for (node, _) in &mut nodes {
        node.terminate();
        let text = node.log_text();
        assert!(
            !text.contains(SECRET),
            "a log line shows the secret:\n{text}"
        );
    }
}
