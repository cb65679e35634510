//! The status page (`GET /ui`) as a browser shows it: headless Chromium
//! loads it from a worker running one healthy and one failed connector, and
//! the rendered page must show both with their states, the failure trace
//! and the record counts. Without Chromium the test says loudly that it
//! skipped (`.ci/run` installs Debian's `chromium-headless-shell`).

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use common::*;
use connect_runtime::rest::{Loggers, RestServer};
use connect_runtime::status::TargetState;

fn chromium() -> Option<PathBuf> {
    let candidates = [
        "/usr/bin/chromium-headless-shell",
        "/usr/lib/chromium-headless-shell/chromium-headless-shell",
        "/usr/bin/chromium",
    ];
    candidates.iter().map(PathBuf::from).find(|p| p.exists())
}

/// The page's DOM after its script ran (`--virtual-time-budget` lets the
/// fetches finish before the dump); with `screenshot`, also a PNG.
fn render(browser: &PathBuf, url: &str, screenshot: Option<&str>) -> String {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--virtual-time-budget=4000",
        "--window-size=1200,640",
    ]);
    match screenshot {
        Some(path) => cmd.arg(format!("--screenshot={path}")),
        None => cmd.arg("--dump-dom"),
    };
    let out = cmd.arg(url).output().expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_shows_running_and_failed_connectors() {
    let Some(browser) = chromium() else {
        // To the stderr handle itself: libtest captures only the print
        // macros, so this shows in every `cargo test` run.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED rest_ui: no headless Chromium (install Debian's chromium-headless-shell); the status page was NOT checked"
        );
        return;
    };
    let s = setup();
    let w = worker(&s);
    w.create_connector(
        "orders-sink",
        props(&[("connector.class", "CollectingSink"), ("topics", "out")]),
        TargetState::Started,
    )
    .await
    .unwrap();
    w.create_connector(
        "orders-source",
        props(&[
            ("connector.class", "PassThroughSource"),
            ("count", "20"),
            ("topic", "out"),
        ]),
        TargetState::Started,
    )
    .await
    .unwrap();
    // TimestampRouter fails on records without a timestamp; with the
    // default errors.tolerance=none the task fails.
    let mut broken = failing_transform_source("3", "false");
    broken.insert("errors.tolerance".into(), "none".into());
    w.create_connector("broken-source", broken, TargetState::Started)
        .await
        .unwrap();
    eventually("20 records in the sink and a FAILED task", || {
        let failed = futures::executor::block_on(w.task_status("broken-source", 0))
            .is_ok_and(|t| t.state.state == "FAILED");
        failed && s.collected.0.lock().unwrap().len() == 20
    })
    .await;
    let server = RestServer::start(
        std::sync::Arc::new(w.clone()),
        "http://127.0.0.1:0",
        Loggers::in_memory("INFO"),
    )
    .await
    .unwrap();
    server.set_ready();
    let url = format!("{}/ui", server.url());

    let browser_url = url.clone();
    let dom = tokio::task::spawn_blocking(move || render(&browser, &browser_url, None))
        .await
        .unwrap();
    let row = |id: &str| -> String {
        let start = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("no row {id} in:\n{dom}"));
        let end = dom[start..].find("</tr>").map_or(dom.len(), |e| start + e);
        dom[start..end].to_string()
    };
    let sink = row("task-orders-sink-0");
    assert!(sink.contains(">RUNNING<"), "{sink}");
    assert!(sink.contains(">20<"), "20 records put: {sink}");
    let source = row("task-orders-source-0");
    assert!(
        source.contains(">RUNNING<") && source.contains(">20<"),
        "{source}"
    );
    let broken = row("task-broken-source-0");
    assert!(broken.contains(">FAILED<"), "{broken}");
    assert!(broken.contains("Tolerance exceeded"), "the trace: {broken}");
    let errors = broken.matches(">1<").count();
    assert!(
        errors >= 1,
        "the failed record counted as an error: {broken}"
    );
    assert!(dom.contains("3 connector(s), updated"), "{dom}");

    if let Ok(path) = std::env::var("UI_SCREENSHOT") {
        let browser = chromium().unwrap();
        tokio::task::spawn_blocking(move || render(&browser, &url, Some(&path)))
            .await
            .unwrap();
    }
    server.stop().await;
    w.shutdown().await;
}
