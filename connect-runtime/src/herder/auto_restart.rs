//! Automatic restarts of failed connectors and tasks: opt-in, beyond
//! Kafka (which leaves a FAILED unit for an operator; Strimzi's
//! `autoRestart` does this from outside). A loop beside the herder looks at
//! the states of the units this worker runs and restarts a FAILED one
//! after an exponential backoff, up to a number of attempts, through the
//! herder's own restart calls, so both modes restart the same way.
//!
//! Keys (worker-wide, each overridable in a connector's config):
//! `auto.restart.enable` (false), `auto.restart.max.attempts` (10; -1 for
//! no limit), `auto.restart.backoff.ms` (1000, the first wait, doubled
//! each attempt) and `auto.restart.backoff.max.ms` (300000, the cap). A
//! unit that has run for `auto.restart.backoff.max.ms` since its last
//! restart starts counting from zero again.
//!
//! While a restart is pending, the unit's status trace ends with a line
//! saying which attempt comes when; after the last attempt it says the
//! restarts gave up. `/metrics` counts attempts and give-ups.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use connect_api::config::validators::Range;
use connect_api::config::{ConfigDef, ConfigKey, ConfigMap, ConfigType, Importance};
use tokio::time::Instant;

use super::Herder;
use crate::metrics::WorkerMetrics;
use crate::status::{State, StatusStore, TaskId};

/// How often the loop looks at the states. Restarts are seconds apart;
/// this only adds a little to each wait.
const TICK: Duration = Duration::from_millis(200);

/// Marks the line this loop adds to a trace, so it is replaced, not
/// repeated.
const MARK: &str = "\n[auto restart] ";

/// The `auto.restart.*` keys with the worker's defaults.
pub fn auto_restart_worker_def() -> ConfigDef {
    define(true)
}

/// The `auto.restart.*` keys as a connector may override them (no
/// defaults: an absent key takes the worker's value).
pub fn auto_restart_connector_def() -> ConfigDef {
    define(false)
}

fn define(defaults: bool) -> ConfigDef {
    const G: &str = "Auto Restart";
    // A connector's keys are optional; Range refuses an absent value, so
    // only the worker's (which always have one) check ranges.
    let key = |name: &str, ty: ConfigType, default: connect_api::config::ConfigValue, min: i32| {
        let k = ConfigKey::new(name, ty);
        if defaults {
            k.default(default).validator(Range::at_least(min))
        } else {
            k.optional()
        }
    };
    let enable = ConfigKey::new("auto.restart.enable", ConfigType::Boolean);
    let enable = if defaults {
        enable.default(false)
    } else {
        enable.optional()
    };
    ConfigDef::new()
        .define(enable.importance(Importance::Medium).group(G, 1)
            .doc("Restart FAILED connectors and tasks on their own, with exponential backoff (ours; Kafka leaves them FAILED). Default off."))
        .define(key("auto.restart.max.attempts", ConfigType::Int, 10.into(), -1).importance(Importance::Low).group(G, 2)
            .doc("Restarts tried before giving up (the unit stays FAILED, saying so); -1 for no limit."))
        .define(key("auto.restart.backoff.ms", ConfigType::Long, 1_000i64.into(), 0).importance(Importance::Low).group(G, 3)
            .doc("Wait before the first restart; each further attempt waits twice as long, up to auto.restart.backoff.max.ms."))
        .define(key("auto.restart.backoff.max.ms", ConfigType::Long, 300_000i64.into(), 0).importance(Importance::Low).group(G, 4)
            .doc("The longest wait between restarts; a unit that has run this long since its last restart counts its attempts from zero again."))
}

/// One unit's restart policy: the worker's keys, overridden by its
/// connector's.
///
/// ```
/// use connect_api::ConfigMap;
/// use connect_runtime::herder::RestartPolicy;
///
/// let worker = ConfigMap::from([("auto.restart.enable", "true"), ("auto.restart.backoff.ms", "500")]);
/// let connector = ConfigMap::from([("auto.restart.max.attempts", "3")]);
/// let policy = RestartPolicy::of(&worker, &connector);
/// assert!(policy.enabled);
/// assert_eq!(policy.max_attempts, Some(3));
/// assert_eq!(policy.delay(1).as_millis(), 500);
/// assert_eq!(policy.delay(3).as_millis(), 2000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartPolicy {
    /// `auto.restart.enable`.
    pub enabled: bool,
    /// `auto.restart.max.attempts`; `None` for no limit.
    pub max_attempts: Option<u32>,
    /// `auto.restart.backoff.ms`.
    pub backoff: Duration,
    /// `auto.restart.backoff.max.ms`.
    pub backoff_max: Duration,
}

impl RestartPolicy {
    /// The policy of a connector configured with `connector` on a worker
    /// configured with `worker`. A value that does not parse counts as
    /// absent (validation reports it when the connector is created).
    pub fn of(worker: &ConfigMap, connector: &ConfigMap) -> RestartPolicy {
        let get = |key: &str| {
            connector
                .get(key)
                .or_else(|| worker.get(key))
                .map(|v| v.trim().to_string())
        };
        let long = |key: &str, default: i64| {
            get(key)
                .and_then(|v| v.parse::<i64>().ok())
                .unwrap_or(default)
        };
        RestartPolicy {
            enabled: get("auto.restart.enable").is_some_and(|v| v.eq_ignore_ascii_case("true")),
            max_attempts: u32::try_from(long("auto.restart.max.attempts", 10)).ok(),
            backoff: Duration::from_millis(long("auto.restart.backoff.ms", 1_000).max(0) as u64),
            backoff_max: Duration::from_millis(
                long("auto.restart.backoff.max.ms", 300_000).max(0) as u64
            ),
        }
    }

    /// The wait before attempt `attempt` (1 for the first).
    pub fn delay(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(32);
        self.backoff
            .saturating_mul(1u32 << doublings.min(31))
            .min(self.backoff_max)
    }
}

/// A unit: a connector (`task` None) or one of its tasks.
type Unit = (String, Option<u32>);

#[derive(Default)]
struct Track {
    /// Restarts done since the unit last ran long enough.
    attempts: u32,
    /// When the pending restart is due.
    due: Option<Instant>,
    /// Since when the unit has been seen RUNNING.
    running_since: Option<Instant>,
    gave_up: bool,
}

/// Run the restart loop until `herder` gives `None` (the herder is gone):
/// what a herder spawns beside itself (both of ours do). `status` is
/// where the worker keeps states (for the trace lines), `worker_props`
/// the worker's config.
pub async fn run<H: Herder + ?Sized>(
    herder: impl Fn() -> Option<Arc<H>>,
    status: Arc<dyn StatusStore>,
    metrics: WorkerMetrics,
    worker_props: ConfigMap,
) {
    let mut tracks: BTreeMap<Unit, Track> = BTreeMap::new();
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(h) = herder() else { return };
        let me = h.worker_id().to_string();
        let mut seen = BTreeSet::new();
        for name in h.connector_names().await {
            let Ok(states) = h.connector_status(&name).await else {
                continue;
            };
            let units = std::iter::once((None, states.connector))
                .chain(states.tasks.into_iter().map(|t| (Some(t.id), t.state)));
            let mut policy = None;
            for (task, state) in units {
                // Only what runs here: each worker restarts its own units.
                if state.worker_id != me {
                    continue;
                }
                let unit = (name.clone(), task);
                seen.insert(unit.clone());
                let track = tracks.entry(unit).or_default();
                if state.state != State::Failed.name() {
                    track.due = None;
                    // Only a unit with restarts behind it has a count to
                    // reset: healthy ones cost no config read per look.
                    if track.attempts > 0 || track.gave_up {
                        let policy = policy_of(&*h, &name, &worker_props, &mut policy).await;
                        note_alive(track, &state.state, &policy);
                    }
                    continue;
                }
                track.running_since = None;
                let policy = policy_of(&*h, &name, &worker_props, &mut policy).await;
                if !policy.enabled || track.gave_up {
                    continue;
                }
                let now = Instant::now();
                match track.due {
                    None => {
                        let attempt = track.attempts + 1;
                        let trace = state.trace.unwrap_or_default();
                        if policy.max_attempts.is_some_and(|max| attempt > max) {
                            track.gave_up = true;
                            metrics.auto_restart(false);
                            let line = format!(
                                "gave up after {} restarts (auto.restart.max.attempts); restart it by hand once the cause is fixed",
                                track.attempts
                            );
                            tracing::error!(connector = %name, task = ?task, "automatic restarts gave up after {} attempts", track.attempts);
                            annotate(&*status, &name, task, &trace, &line);
                        } else {
                            let wait = policy.delay(attempt);
                            track.due = Some(now + wait);
                            let of = policy
                                .max_attempts
                                .map_or(String::new(), |max| format!(" of {max}"));
                            let line = format!(
                                "restart {attempt}{of} in {} ms (auto.restart.enable)",
                                wait.as_millis()
                            );
                            tracing::warn!(connector = %name, task = ?task, "failed; automatic restart {attempt}{of} in {wait:?}");
                            annotate(&*status, &name, task, &trace, &line);
                        }
                    }
                    Some(due) if due <= now => {
                        track.due = None;
                        track.attempts += 1;
                        metrics.auto_restart(true);
                        let restarted = match task {
                            Some(t) => h.restart_task(&name, t).await,
                            None => h.restart_connector(&name, false, false).await.map(|_| ()),
                        };
                        if let Err(e) = restarted {
                            tracing::warn!(connector = %name, task = ?task, error = %e, "automatic restart failed");
                        }
                    }
                    Some(_) => {}
                }
            }
        }
        tracks.retain(|unit, _| seen.contains(unit));
    }
}

/// The policy of connector `name`, read once per look.
async fn policy_of<H: Herder + ?Sized>(
    h: &H,
    name: &str,
    worker_props: &ConfigMap,
    cached: &mut Option<RestartPolicy>,
) -> RestartPolicy {
    if let Some(p) = cached {
        return p.clone();
    }
    let connector = h
        .connector_info(name)
        .await
        .map(|i| i.config)
        .unwrap_or_default();
    let policy = RestartPolicy::of(worker_props, &connector);
    *cached = Some(policy.clone());
    policy
}

/// A unit seen in a state other than FAILED: once it has run for the
/// longest backoff, its attempts count from zero again.
fn note_alive(track: &mut Track, state: &str, policy: &RestartPolicy) {
    if state != State::Running.name() {
        track.running_since = None;
        return;
    }
    let since = *track.running_since.get_or_insert_with(Instant::now);
    if since.elapsed() >= policy.backoff_max {
        track.attempts = 0;
        track.gave_up = false;
    }
}

/// Put `line` at the end of the unit's FAILED trace (replacing an earlier
/// one of ours).
fn annotate(status: &dyn StatusStore, name: &str, task: Option<u32>, trace: &str, line: &str) {
    let base = trace.split(MARK).next().unwrap_or_default();
    let trace = format!("{base}{MARK}{line}");
    match task {
        Some(t) => status.task_state(
            &TaskId {
                connector: name.to_string(),
                task: t,
            },
            State::Failed,
            Some(trace),
        ),
        None => status.put_connector(name, State::Failed, Some(trace)),
    }
}
