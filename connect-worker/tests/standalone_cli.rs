//! `connect-standalone` as a command: arguments, worker-config checks that
//! fail fast naming the key and the file, warnings for unknown and
//! deprecated keys, and a graceful SIGTERM that commits source offsets.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;

use common::{repo_file, topic_values};

const BIN: &str = env!("CARGO_BIN_EXE_connect-standalone");

fn run(dir: &Path, args: &[&Path]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run connect-standalone");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const BASE: &str = "key.converter=org.apache.kafka.connect.json.JsonConverter\nvalue.converter=org.apache.kafka.connect.json.JsonConverter\nlisteners=http://127.0.0.1:0\n";

#[test]
fn bad_arguments_and_values_fail_fast_naming_key_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (code, err) = run(d, &[]);
    assert_eq!(code, 2);
    assert!(err.contains("usage: connect-standalone"), "{err}");

    let bad = d.join("bad-worker.properties");
    std::fs::write(
        &bad,
        format!("{BASE}offset.storage.file.filename=x\noffset.flush.interval.ms=soon\n"),
    )
    .unwrap();
    let (code, err) = run(d, &[&bad]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("offset.flush.interval.ms") && err.contains("bad-worker.properties"),
        "{err}"
    );

    let no_offsets = d.join("no-offsets.properties");
    std::fs::write(&no_offsets, BASE).unwrap();
    let (code, err) = run(d, &[&no_offsets]);
    assert_eq!(code, 2);
    assert!(err.contains("offset.storage.file.filename"), "{err}");

    let worker = d.join("worker.properties");
    std::fs::write(
        &worker,
        format!(
            "{BASE}offset.storage.file.filename={}\n",
            d.join("offsets").display()
        ),
    )
    .unwrap();
    let (code, err) = run(d, &[&worker, &d.join("missing.properties")]);
    assert_eq!(code, 2);
    assert!(err.contains("missing.properties"), "{err}");

    // A connector whose config is invalid: the worker does not start.
    let connector = d.join("bad-sink.properties");
    std::fs::write(&connector, "name=s\nconnector.class=FileStreamSink\n").unwrap();
    let (code, err) = run(d, &[&worker, &connector]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("cannot create connector 's'") && err.contains("topics"),
        "{err}"
    );
    let unknown = d.join("unknown.properties");
    std::fs::write(&unknown, "name=u\nconnector.class=NoSuchConnector\n").unwrap();
    let (code, err) = run(d, &[&worker, &unknown]);
    assert_eq!(code, 1);
    assert!(
        err.contains("NoSuchConnector") && err.contains("FileStreamSourceConnector"),
        "{err}"
    );
}

#[test]
fn warnings_then_graceful_sigterm_commits_source_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let offsets = d.join("connect.offsets");
    let worker = d.join("worker.properties");
    std::fs::write(
        &worker,
        format!(
            "{BASE}offset.storage.file.filename={}\noffset.flush.interval.ms=600000\nplugin.path=/usr/share/java\ninternal.key.converter=org.apache.kafka.connect.json.JsonConverter\nrest.advertised.typo=1\n",
            offsets.display()
        ),
    )
    .unwrap();
    let text = "firest line\nsecond line\n";
    std::fs::write(d.join("test.txt"), text).unwrap();
    let mut child = Command::new(BIN)
        .arg(&worker)
        .arg(repo_file("config/connect-file-source.properties"))
        .current_dir(d)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let sink = log.clone();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let mut l = sink.lock().unwrap();
            l.push_str(&line);
            l.push('\n');
        }
    });
    let start = Instant::now();
    while !log.lock().unwrap().contains("reading file") {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{}",
            log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    {
        let l = log.lock().unwrap();
        assert!(
            l.contains("unknown worker configuration key 'rest.advertised.typo'"),
            "{l}"
        );
        assert!(l.contains("'internal.key.converter' is deprecated"), "{l}");
        assert!(l.contains("plugin.path is accepted and ignored"), "{l}");
        assert!(l.contains("bootstrap.servers=127.0.0.1:"), "{l}");
        assert!(l.contains("embedded Kafka"), "{l}");
    }
    // Both lines are on the topic; with a 10 minute flush interval only the
    // shutdown commit can store their position.
    let bootstrap = {
        let l = log.lock().unwrap();
        let at = l.find("bootstrap.servers=").unwrap() + "bootstrap.servers=".len();
        l[at..].split_whitespace().next().unwrap().to_string()
    };
    assert_eq!(topic_values(&bootstrap, "connect-test", 2).len(), 2);
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    reader.join().unwrap();
    assert_eq!(exit.code(), Some(0), "{}", log.lock().unwrap());
    assert!(log.lock().unwrap().contains("worker stopped"));
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&offsets).unwrap()).unwrap();
    assert_eq!(
        stored["offsets"][0]["value"]["position"],
        text.len(),
        "{stored}"
    );
}
