//! The deterministic-schedule simulation of a distributed cluster (see
//! `cluster_sim/mod.rs` for what runs and what is checked).
//!
//! - CI size: `cargo test -p connect-distributed --test simulation`
//!   (1,000 seeds in two halves, one per core).
//! - Long size: `SIM_SEEDS=100000 cargo test --release -p connect-distributed --test simulation`.
//! - One seed, with its timeline: `SIM_SEED=42 cargo test -p connect-distributed --test simulation -- --nocapture`.
//! - Another range: `SIM_FIRST_SEED=5000 SIM_SEEDS=1000 ...`.

mod cluster_sim;
mod fake_wire;

use std::time::Duration;

use std::collections::BTreeMap;

use cluster_sim::schedule::{run, Report, Size};

/// Seeds per CI run (both halves together).
const CI_SEEDS: u64 = 1_000;

const SIZE: Size = Size {
    steps: 12,
    quiet: Duration::from_secs(60),
    lagging_reads: true,
    every_protocol: true,
};

/// The schedule the regression seeds were found with (before the
/// lagging-reads fault).
const FIRST_SIZE: Size = Size {
    lagging_reads: false,
    every_protocol: false,
    ..SIZE
};

fn env_u64(key: &str) -> Option<u64> {
    std::env::var(key).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{key}={v} is not a whole number"))
    })
}

/// Runs one seed on its own paused, single-threaded runtime.
fn run_seed(seed: u64) -> Result<Report, String> {
    run_sized(seed, &SIZE)
}

fn run_sized(seed: u64, size: &Size) -> Result<Report, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run(seed, size))
}

/// The seeds of this half (`half` 0 or 1), or the one `SIM_SEED` names.
fn seeds(half: u64) -> Vec<u64> {
    if let Some(seed) = env_u64("SIM_SEED") {
        return if half == 0 { vec![seed] } else { Vec::new() };
    }
    let first = env_u64("SIM_FIRST_SEED").unwrap_or(0);
    let count = env_u64("SIM_SEEDS").unwrap_or(CI_SEEDS);
    (first..first + count).filter(|s| s % 2 == half).collect()
}

fn run_half(half: u64) {
    let seeds = seeds(half);
    let started = std::time::Instant::now();
    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    for &seed in &seeds {
        match run_seed(seed) {
            Err(failure) => panic!(
                "{failure}\n\nreplay: SIM_SEED={seed} cargo test -p connect-distributed --test simulation -- --nocapture"
            ),
            Ok(report) => {
                if std::env::var_os("SIM_SEED").is_some() {
                    eprintln!("{}\nseed {seed}: every invariant held", report.timeline);
                }
                for (kind, n) in report.outcomes {
                    *outcomes.entry(kind).or_default() += n;
                }
            }
        }
    }
    // How admin calls through random workers fared under the churn (the
    // share of errors a user would see as 409/500 during rebalances).
    eprintln!(
        "simulation: {} seeds, no invariant broken, {:.1} s; admin calls: {outcomes:?}",
        seeds.len(),
        started.elapsed().as_secs_f64()
    );
}

/// Seeds that broke an invariant before a fix, kept as regression tests
/// (each runs in every CI, whatever `SIM_SEEDS` says).
const REGRESSIONS: [(u64, &str); 5] = [
    (
        4,
        "the assignor's clock was the wall clock: a scheduled rebalance never came due on paused time (now tokio's monotonic clock)",
    ),
    (
        10,
        "a worker whose JoinGroup answer was lost did not fence itself until the rebalance timeout, while the coordinator expired it a session after completing the round",
    ),
    (
        128,
        "a leader cut off fenced itself when its session ran out and took its stop time to stop, while the next leader (no memory of the assignment) handed its work out at once",
    ),
    (
        177,
        "an assignment without a delay did not cancel an earlier scheduled rebalance: an extra round after the lost worker came back",
    ),
    (
        529,
        "a connector restarted and then deleted before its restart ran kept its old instance running on the worker, unlisted, forever",
    ),
];

#[test]
fn the_seeds_that_found_bugs_stay_fixed() {
    for (seed, what) in REGRESSIONS {
        if let Err(failure) = run_sized(seed, &FIRST_SIZE) {
            panic!("regression of seed {seed} ({what}):\n{failure}");
        }
    }
}

#[test]
fn even_seeds_keep_every_invariant() {
    run_half(0);
}

#[test]
fn odd_seeds_keep_every_invariant() {
    run_half(1);
}
