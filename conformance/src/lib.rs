//! Differential conformance tests of this workspace against Apache Kafka
//! Connect 4.4.0 itself: `tests/java_differential.rs` (converters, SMTs,
//! predicates and `Values` against Kafka's own classes, the judge in
//! `java/`) and `tests/rest_differential.rs` (the REST API against a Kafka
//! standalone worker, in `rest-java/`). `README.md` describes the protocol;
//! `KNOWN_DIFFERENCES.md` and `REST_DIFFERENCES.md` list what differs today.
//!
//! The library holds what both tests share: building their Maven projects.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime};

/// The newest modification time under `path`.
fn newest_mtime(path: &Path) -> Option<SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    let mut newest = meta.modified().ok()?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).ok()?.flatten() {
            if let Some(t) = newest_mtime(&entry.path()) {
                newest = newest.max(t);
            }
        }
    }
    Some(newest)
}

/// Whether `cmd arg` runs and succeeds.
fn runs(cmd: &str, arg: &str) -> bool {
    Command::new(cmd)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `target/<jar>` of the Maven project `project` (a directory of this
/// crate), built with `mvn -q -B package` when it is missing or older than
/// the project's sources. `Err` says why it cannot be had (no Java, no
/// Maven, a failed build), for the caller's SKIPPED or failure.
pub fn maven_jar(project: &str, jar: &str) -> Result<PathBuf, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(project);
    let jar = dir.join("target").join(jar);
    if !runs("java", "-version") {
        return Err("`java` is not installed (Java 17+ is needed)".into());
    }
    let sources = newest_mtime(&dir.join("pom.xml"))
        .into_iter()
        .chain(newest_mtime(&dir.join("src")))
        .max();
    let built = std::fs::metadata(&jar).and_then(|m| m.modified()).ok();
    let fresh = matches!((built, sources), (Some(b), Some(s)) if b >= s)
        && dir.join("target").join("lib").is_dir();
    if fresh {
        return Ok(jar);
    }
    if !runs("mvn", "-v") {
        return Err(format!(
            "{} is missing or stale and `mvn` is not installed",
            jar.display()
        ));
    }
    let started = Instant::now();
    let _ = writeln!(
        std::io::stderr(),
        "conformance: building {}: mvn -q -B package",
        dir.display()
    );
    let out = Command::new("mvn")
        .args(["-q", "-B", "package"])
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("cannot run mvn: {e}"))?;
    if !out.status.success() || !jar.is_file() {
        return Err(format!(
            "`mvn -q -B package` failed in {}:\n{}{}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let _ = writeln!(
        std::io::stderr(),
        "conformance: {} built in {:.1} s",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(jar)
}
