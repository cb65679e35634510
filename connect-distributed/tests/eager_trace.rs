//! The eager assignor against Java's own: random rounds (members with their
//! JoinGroup metadata bytes, a leader, the leader's config snapshot and the
//! fresh one it would read) go to Kafka 4.4.0's `EagerAssignor`
//! (`tests/java/EagerTrace.java`, compiled and run here) and to
//! [`assign_eager`]; every member's assignment must be the same.
//!
//! Java writes a member's connectors in `HashSet` order and ours in
//! assignment order (see `connect_distributed::protocol`), so assignments
//! are compared decoded, with the connectors and tasks sorted; the bytes
//! must be identical whenever a member has at most one connector (where the
//! order cannot differ).
//!
//! Java takes a fresh snapshot only when the one it joined with (whose
//! offset it reported itself) is behind a member; the Rust leader reads the
//! config topic to its end before assigning and passes one snapshot. The
//! test passes the snapshot Java ends up using.
//!
//! Needs Java 17+ (`java`, `javac`) and Maven (to resolve Kafka's jars,
//! `tests/java/pom.xml`, into `~/.m2`). Without them it prints a loud
//! `SKIPPED` line; `CONFORMANCE_REQUIRE_JAVA=1` (CI) turns that into a
//! failure. `EAGER_TRACE_SEED=<u64>` replays a run (the seed is printed),
//! `EAGER_TRACE_ROUNDS=<n>` sets the number of rounds (default 1000).

/// `eprintln!` that libtest does not capture.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use connect_distributed::assignor::{
    assign_eager, AssignError, ConfigSnapshot, ConnectorsAndTasks, Member, RoundInput,
};
use connect_distributed::protocol::{
    Assignment, SubProtocol, TaskId, WorkerMetadata, CONFIG_MISMATCH,
};

const CLASS: &str = "org.apache.kafka.connect.runtime.distributed.EagerTrace";

fn skip(why: &str) {
    assert!(
        std::env::var_os("CONFORMANCE_REQUIRE_JAVA").is_none(),
        "CONFORMANCE_REQUIRE_JAVA is set but the eager assignor replay cannot run: {why}"
    );
    say!("==================================================================");
    say!("SKIPPED: eager assignor replay against Kafka 4.4.0's EagerAssignor: {why}");
    say!("==================================================================");
}

fn runs(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn mtime(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// Compiles `EagerTrace.java` (when stale) on Kafka's jars; the classpath
/// to run it with.
fn build_java() -> Result<String, String> {
    for (program, arg) in [("java", "-version"), ("javac", "-version"), ("mvn", "-v")] {
        if !runs(program, arg) {
            return Err(format!(
                "`{program}` is not installed (Java 17+ and Maven are needed)"
            ));
        }
    }
    let java_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java");
    let pom = java_dir.join("pom.xml");
    let source = java_dir.join("EagerTrace.java");
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("eager-trace");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let cache = work.join("classpath.txt");
    if mtime(&cache) < mtime(&pom) || mtime(&cache).is_none() {
        let out = Command::new("mvn")
            .args(["-B", "-q", "-f"])
            .arg(&pom)
            .arg("dependency:build-classpath")
            .arg(format!("-Dmdep.outputFile={}", cache.display()))
            .output()
            .map_err(|e| format!("cannot run mvn: {e}"))?;
        if !out.status.success() {
            let _ = std::fs::remove_file(&cache);
            return Err(format!(
                "Maven could not resolve Kafka 4.4.0's jars:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    let jars = std::fs::read_to_string(&cache).map_err(|e| e.to_string())?;
    let jars = jars.trim();
    let classes = work.join("classes");
    let class_file = classes.join(CLASS.replace('.', "/") + ".class");
    if mtime(&class_file) < mtime(&source) || mtime(&class_file).is_none() {
        let out = Command::new("javac")
            .arg("-d")
            .arg(&classes)
            .args(["-cp", jars, "-nowarn", "-XDignore.symbol.file"])
            .arg(&source)
            .output()
            .map_err(|e| format!("cannot run javac: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "javac failed on {}:\n{}",
                source.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    Ok(format!("{}:{jars}", classes.display()))
}

/// Sends every line to the Java side; its answers, in order.
fn ask_java(classpath: &str, lines: Vec<String>) -> Vec<String> {
    let mut child = Command::new("java")
        .args([
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            classpath,
            CLASS,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // slf4j without a binding says so once on stderr; keep it out.
        .stderr(Stdio::null())
        .spawn()
        .expect("start java");
    let mut stdin = child.stdin.take().expect("stdin");
    let n = lines.len();
    let writer = std::thread::spawn(move || {
        let mut w = std::io::BufWriter::new(&mut stdin);
        for l in lines {
            w.write_all(l.as_bytes()).expect("write to java");
            w.write_all(b"\n").expect("write to java");
        }
        w.flush().expect("flush java");
    });
    let answers: Vec<String> = BufReader::new(child.stdout.take().expect("stdout"))
        .lines()
        .map(|l| l.expect("read java's answer"))
        .collect();
    writer.join().expect("writer thread");
    let status = child.wait().expect("java exit");
    assert!(status.success(), "java exited with {status}");
    assert_eq!(
        answers.len(),
        n,
        "java answered {} of {n} rounds",
        answers.len()
    );
    answers
}

/// SplitMix64: a small seeded generator, so a run can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

/// Names that sort the same by code point and by UTF-16 unit (none above
/// U+D7FF), with prefixes and digits that sort differently from numbers.
const CONNECTOR_NAMES: &[&str] = &[
    "a",
    "b",
    "c1",
    "c10",
    "c2",
    "Z",
    "sink-jdbc",
    "source.s3",
    "é",
    "日本",
    "a-b",
    "_x",
    "0",
];
const MEMBER_PREFIXES: &[&str] = &["connect-1", "connect-10", "connect-2", "worker", "Ω", "w"];

struct Round {
    leader: String,
    /// (id, url, offset), in the broker's order.
    members: Vec<(String, String, i64)>,
    stale: ConfigSnapshot,
    fresh: ConfigSnapshot,
}

fn random_snapshot(rng: &mut Rng, offset: i64) -> ConfigSnapshot {
    let mut connectors = BTreeMap::new();
    for _ in 0..rng.below(9) {
        connectors.insert(rng.pick(CONNECTOR_NAMES).to_owned(), rng.below(7) as u32);
    }
    ConfigSnapshot { offset, connectors }
}

fn random_round(rng: &mut Rng) -> Round {
    let n = 1 + rng.below(8) as usize;
    let mut members = Vec::with_capacity(n);
    for i in 0..n {
        // Mostly broker-like ids; now and then one repeated.
        let id = if i > 0 && rng.below(30) == 0 {
            let (id, _, _): &(String, String, i64) = &members[rng.below(i as u64) as usize];
            id.clone()
        } else {
            format!("{}-{:08x}", rng.pick(MEMBER_PREFIXES), rng.next() as u32)
        };
        let url = format!("http://10.0.0.{}:8083/", rng.below(256));
        members.push((id, url, rng.below(12) as i64));
    }
    let leader_index = rng.below(n as u64) as usize;
    let leader = if rng.below(50) == 0 {
        // Not a member: both sides refuse it.
        "nobody".to_owned()
    } else {
        members[leader_index].0.clone()
    };
    // The leader's snapshot is the one whose offset it reported (of its
    // last entry, when its id is repeated: the one both sides keep).
    let leader_offset = members
        .iter()
        .rev()
        .find(|(id, _, _)| *id == leader)
        .map_or(0, |m| m.2);
    let stale = random_snapshot(rng, leader_offset);
    let fresh_offset = leader_offset + rng.below(12) as i64;
    let mut fresh = if rng.below(2) == 0 {
        stale.clone()
    } else {
        random_snapshot(rng, fresh_offset)
    };
    fresh.offset = fresh_offset;
    Round {
        leader,
        members,
        stale,
        fresh,
    }
}

fn snapshot_tokens(s: &ConfigSnapshot, out: &mut Vec<String>) {
    out.push(s.connectors.len().to_string());
    for (name, tasks) in &s.connectors {
        out.push(hex(name.as_bytes()));
        out.push(tasks.to_string());
    }
}

fn java_line(r: &Round) -> String {
    let mut t = vec![
        hex(r.leader.as_bytes()),
        r.stale.offset.to_string(),
        r.fresh.offset.to_string(),
        r.members.len().to_string(),
    ];
    for (id, url, offset) in &r.members {
        let metadata = WorkerMetadata::new(SubProtocol::Eager, url.clone(), *offset, None)
            .encode()
            .expect("metadata");
        t.push(hex(id.as_bytes()));
        t.push(hex(&metadata));
    }
    snapshot_tokens(&r.stale, &mut t);
    snapshot_tokens(&r.fresh, &mut t);
    t.join(" ")
}

/// Ours, from the same bytes the Java side got.
fn ours(r: &Round) -> Result<BTreeMap<String, Vec<u8>>, AssignError> {
    let members: Vec<Member> = r
        .members
        .iter()
        .map(|(id, url, offset)| {
            let bytes = WorkerMetadata::new(SubProtocol::Eager, url.clone(), *offset, None)
                .encode()
                .expect("metadata");
            let metadata = WorkerMetadata::decode(&bytes).expect("decode metadata");
            Member::from_metadata(id.clone(), &metadata)
        })
        .collect();
    // The highest offset of the members as Java keeps them: the last
    // entry of a repeated id.
    let last: BTreeMap<&str, i64> = r.members.iter().map(|m| (m.0.as_str(), m.2)).collect();
    let max = last.values().copied().max().unwrap_or(i64::MIN);
    let snapshot = if r.stale.offset >= max {
        &r.stale
    } else {
        &r.fresh
    };
    let round = assign_eager(&RoundInput {
        leader_id: &r.leader,
        members: &members,
        snapshot,
        protocol: SubProtocol::Eager,
        last_completed_generation: 3,
        generation: 4,
        now_ms: 0,
    })?;
    for m in round.members.values() {
        assert_eq!(m.owned, m.assigned);
        assert!(m.revoked.is_empty());
    }
    Ok(round.encode().expect("encode"))
}

/// An assignment with its lists in a canonical order.
fn canonical(bytes: &[u8]) -> (Assignment, ConnectorsAndTasks) {
    let a = Assignment::decode(bytes).expect("decode assignment");
    let mut connectors: Vec<String> = a.connectors().into_iter().map(str::to_owned).collect();
    connectors.sort();
    let mut tasks: Vec<TaskId> = a.tasks();
    tasks.sort();
    let header = Assignment {
        assigned: Vec::new(),
        ..a
    };
    (header, ConnectorsAndTasks { connectors, tasks })
}

#[test]
fn eager_assignments_are_javas() {
    let classpath = match build_java() {
        Ok(cp) => cp,
        Err(why) => return skip(&why),
    };
    let seed = std::env::var("EAGER_TRACE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let count: usize = std::env::var("EAGER_TRACE_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    say!("eager_trace: seed {seed} (EAGER_TRACE_SEED replays it), {count} rounds");
    let mut rng = Rng(seed);
    let rounds: Vec<Round> = (0..count).map(|_| random_round(&mut rng)).collect();
    let answers = ask_java(&classpath, rounds.iter().map(java_line).collect());

    let (mut assigned, mut mismatches, mut refused, mut members_compared, mut same_bytes) =
        (0, 0, 0, 0, 0);
    for (i, (round, answer)) in rounds.iter().zip(&answers).enumerate() {
        let context = format!("round {i} (seed {seed}): {}", java_line(round));
        let mut tokens = answer.split(' ');
        match tokens.next() {
            Some("error") => {
                let ours = ours(round);
                assert!(
                    matches!(
                        ours,
                        Err(AssignError::LeaderNotAMember(_) | AssignError::NoMembers)
                    ),
                    "{context}: Java threw {answer}, ours gave {ours:?}"
                );
                refused += 1;
                continue;
            }
            Some("ok") => {}
            other => panic!("{context}: unexpected answer start {other:?}"),
        }
        let n: usize = tokens.next().expect("count").parse().expect("count");
        let mut java = BTreeMap::new();
        for _ in 0..n {
            let id = String::from_utf8(unhex(tokens.next().expect("id"))).expect("utf-8 id");
            java.insert(id, unhex(tokens.next().expect("assignment")));
        }
        let ours = ours(round).unwrap_or_else(|e| panic!("{context}: ours failed: {e}"));
        assert_eq!(
            java.keys().collect::<Vec<_>>(),
            ours.keys().collect::<Vec<_>>(),
            "{context}: members"
        );
        let mut failed = false;
        for (id, java_bytes) in &java {
            let ours_bytes = &ours[id];
            let (java_header, java_items) = canonical(java_bytes);
            let (ours_header, ours_items) = canonical(ours_bytes);
            assert_eq!(ours_header, java_header, "{context}: member {id}'s header");
            assert_eq!(ours_items, java_items, "{context}: member {id}'s work");
            failed |= java_header.error == CONFIG_MISMATCH;
            if java_items.connectors.len() <= 1 {
                assert_eq!(ours_bytes, java_bytes, "{context}: member {id}'s bytes");
            }
            if ours_bytes == java_bytes {
                same_bytes += 1;
            }
            members_compared += 1;
        }
        if failed {
            mismatches += 1;
        } else {
            assigned += 1;
        }
    }
    say!(
        "eager_trace: {count} rounds agree with Kafka 4.4.0's EagerAssignor: {assigned} assigned, \
         {mismatches} CONFIG_MISMATCH, {refused} refused (leader not a member); \
         {members_compared} member assignments, {same_bytes} byte for byte"
    );
    assert!(
        count < 300 || assigned >= 300,
        "only {assigned} assigned rounds"
    );
}
