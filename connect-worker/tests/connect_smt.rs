//! End-to-end tests of the `connect-smt` binary: properties file in, JSON
//! lines through stdin, records and errors out.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn config_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "connect-smt-{}-{name}.properties",
        std::process::id()
    ));
    std::fs::write(&path, text).expect("write config");
    path
}

fn run(config: &str, name: &str, input: &[u8]) -> Output {
    let path = config_file(name, config);
    let mut child = Command::new(env!("CARGO_BIN_EXE_connect-smt"))
        .arg("--config")
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start connect-smt");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write input");
    let out = child.wait_with_output().expect("wait");
    let _ = std::fs::remove_file(path);
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 output")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const CHAIN: &str = "\
# route, tag, and drop tombstones
transforms=route,tag,dropTombstones
transforms.route.type=org.apache.kafka.connect.transforms.RegexRouter
transforms.route.regex=(.*)-raw
transforms.route.replacement=$1
transforms.tag.type=InsertHeader
transforms.tag.header=via
transforms.tag.value.literal=smt
transforms.dropTombstones.type=Filter
transforms.dropTombstones.predicate=isTombstone
predicates=isTombstone
predicates.isTombstone.type=RecordIsTombstone
";

const STRING_SCHEMA: &str = r#"{"type":"string","optional":false}"#;

#[test]
fn transforms_records_and_drops_tombstones() {
    let input = format!(
        "{}\n{}\n{}\n",
        r#"{"topic":"orders-raw","partition":2,"offset":5,"timestamp":1700000000000,"key":{"schema":null,"payload":"k1"},"value":{"schema":{"type":"string","optional":false},"payload":"hello"},"headers":[{"key":"h","value":{"schema":{"type":"int32","optional":false},"payload":7}}]}"#,
        r#"{"topic":"orders-raw","offset":6,"value":null}"#,
        r#"{"topic":"other","value":{"schema":null,"payload":{"a":1}}}"#,
    );
    let out = run(CHAIN, "happy", input.as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let via =
        r#"{"key":"via","value":{"schema":{"type":"string","optional":false},"payload":"smt"}}"#;
    assert_eq!(
        lines[0],
        format!(
            r#"{{"topic":"orders","partition":2,"offset":5,"timestamp":1700000000000,"key":{{"schema":null,"payload":"k1"}},"value":{{"schema":{STRING_SCHEMA},"payload":"hello"}},"headers":[{{"key":"h","value":{{"schema":{{"type":"int32","optional":false}},"payload":7}}}},{via}]}}"#
        )
    );
    // Absent partition/timestamp/key/headers come out as null / empty.
    assert_eq!(
        lines[1],
        format!(
            r#"{{"topic":"other","partition":null,"offset":0,"timestamp":null,"key":null,"value":{{"schema":null,"payload":{{"a":1}}}},"headers":[{via}]}}"#
        )
    );
}

const FAILING: &str = "\
transforms=ts
transforms.ts.type=TimestampConverter$Value
transforms.ts.field=when
transforms.ts.target.type=unix
transforms.ts.format=yyyy-MM-dd
";

fn failing_input() -> String {
    [
        r#"{"topic":"t","value":{"schema":null,"payload":{"when":"2024-01-31"}}}"#,
        r#"{"topic":"t","value":{"schema":null,"payload":{"when":"not a date"}}}"#,
        r#"{"topic":"t","value":{"schema":null,"payload":{"when":"1970-01-02"}}}"#,
    ]
    .join("\n")
}

#[test]
fn tolerance_none_stops_at_the_first_failure() {
    let out = run(FAILING, "none", failing_input().as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("line 2"), "{err}");
    assert!(
        err.contains("transform 'ts'") && err.contains("TimestampConverter$Value"),
        "{err}"
    );
    assert!(err.contains("Could not parse timestamp"), "{err}");
    let lines: Vec<_> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains(r#""when":1706659200000"#), "{}", lines[0]);
}

#[test]
fn tolerance_all_skips_and_reports() {
    let config = format!("{FAILING}errors.tolerance=all\n");
    let out = run(&config, "all", failing_input().as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("line 2") && err.contains("transform 'ts'"),
        "{err}"
    );
    let lines: Vec<_> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[1].contains(r#""when":86400000"#), "{}", lines[1]);
}

#[test]
fn malformed_lines_are_errors_not_panics() {
    let mut bad: Vec<Vec<u8>> = [
        "not json",
        "[1,2]",
        r#"{"value":null}"#,
        r#"{"topic":5}"#,
        r#"{"topic":"t","partition":"x"}"#,
        r#"{"topic":"t","partition":99999999999}"#,
        r#"{"topic":"t","value":{"payload":1}}"#,
        r#"{"topic":"t","value":{"schema":{"type":"nope"},"payload":1}}"#,
        r#"{"topic":"t","value":{"schema":{"type":"int32"},"payload":"x"}}"#,
        r#"{"topic":"t","headers":{}}"#,
        r#"{"topic":"t","headers":[{"value":null}]}"#,
        r#"{"topic":"t","extra":1}"#,
        "{\"topic\":\"t\"",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    bad.push(vec![b'{', 0xff, 0xfe, b'}']);
    for line in &bad {
        let out = run(CHAIN, "malformed", line);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(line)
        );
        let err = stderr(&out);
        assert!(
            err.contains("line 1: ") && !err.contains("panicked"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
    // Under errors.tolerance=all every bad line is skipped, good ones kept.
    let mut input = bad.join(&b'\n');
    input.extend_from_slice(b"\n{\"topic\":\"ok-raw\"}\n");
    let out = run(
        &format!("{CHAIN}errors.tolerance=all\n"),
        "malformed-all",
        &input,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), bad.len());
    // The final record has a null value: a tombstone, dropped by the chain.
    assert!(out.stdout.is_empty());
}

#[test]
fn config_errors_exit_2_naming_the_key() {
    for (config, fragment) in [
        ("transforms=a\n", "transforms.a.type"),
        (
            "transforms=a\ntransforms.a.type=Nope\n",
            "Class Nope could not be found",
        ),
        (
            "transforms=a\ntransforms.a.type=Filter\ntransforms.a.negate=true\n",
            "transforms.a.negate",
        ),
        ("errors.tolerance=some\n", "errors.tolerance"),
    ] {
        let out = run(config, "config", b"");
        assert_eq!(out.status.code(), Some(2), "{config}");
        assert!(stderr(&out).contains(fragment), "{}", stderr(&out));
    }
    let out = Command::new(env!("CARGO_BIN_EXE_connect-smt"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--config is required"));
    let out = Command::new(env!("CARGO_BIN_EXE_connect-smt"))
        .args(["--config", "/nonexistent/chain.properties"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read config file"));
}

#[test]
fn empty_chain_round_trips_records() {
    let line = r#"{"topic":"t","partition":0,"offset":1,"timestamp":2,"key":null,"value":{"schema":{"type":"struct","fields":[{"type":"int64","optional":true,"field":"n"}],"optional":false,"name":"S"},"payload":{"n":3}},"headers":[]}"#;
    let out = run("", "empty", format!("{line}\n\n").as_bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim_end(), line);
}
