//! [`WorkerMetrics`] as a `prometheus_client` collector: what
//! `GET /metrics` renders, and what an embedding service registers in its
//! own registry.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::{AvgMax, Rated, TaskKind, TaskMetrics, WorkerMetrics};
use crate::status::{State, TaskId};

type Fmt = Result<(), std::fmt::Error>;

/// A sample's value: counters are whole, gauges may be NaN (Kafka's value
/// for an average before the first observation).
enum Sample {
    Count(u64),
    Gauge(f64),
}

fn avg(a: &AvgMax) -> Sample {
    Sample::Gauge(a.avg().unwrap_or(f64::NAN))
}

fn max(a: &AvgMax) -> Sample {
    Sample::Gauge(a.max().map_or(f64::NAN, |m| m as f64))
}

/// One metric family: a descriptor, then one sample per label set.
fn family<'a>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (Vec<(&'a str, String)>, Sample)>,
) -> Fmt {
    let mut rows = rows.into_iter().peekable();
    let Some((_, first)) = rows.peek() else {
        return Ok(());
    };
    // Counters get `_total` appended by the encoder: name them without it.
    let (name, ty) = match first {
        Sample::Count(_) => (
            name.strip_suffix("_total").unwrap_or(name),
            MetricType::Counter,
        ),
        Sample::Gauge(_) => (name, MetricType::Gauge),
    };
    let mut metric = encoder.encode_descriptor(name, help, None, ty)?;
    for (labels, sample) in rows {
        let m = metric.encode_family(&labels)?;
        match sample {
            Sample::Count(v) => ConstCounter::new(v).encode(m)?,
            Sample::Gauge(v) => ConstGauge::new(v).encode(m)?,
        }
    }
    Ok(())
}

fn task_labels(id: &TaskId) -> Vec<(&'static str, String)> {
    vec![
        ("connector", id.connector.clone()),
        ("task", id.task.to_string()),
    ]
}

type TaskRow<'t> = &'t (TaskId, TaskKind, Arc<TaskMetrics>);

/// One family per task attribute, over the tasks `rows` selects.
fn task_family<'t>(
    encoder: &mut DescriptorEncoder,
    tasks: &'t [(TaskId, TaskKind, Arc<TaskMetrics>)],
    kind: Option<TaskKind>,
    name: &str,
    help: &str,
    value: impl Fn(&TaskMetrics) -> Sample,
) -> Fmt {
    let rows = tasks
        .iter()
        .filter(|(_, k, _)| kind.is_none_or(|want| *k == want))
        .map(|t: TaskRow<'t>| (task_labels(&t.0), value(&t.2)));
    family(encoder, name, help, rows)
}

impl WorkerMetrics {
    /// A registry holding these metrics: what `GET /metrics` renders.
    pub fn registry(&self) -> Registry {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self.clone()));
        registry
    }

    /// The metrics in Prometheus' text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry()).is_err() {
            // Encoding into a String cannot fail; say so if it ever does.
            let _ = writeln!(out, "# metrics could not be encoded");
        }
        out
    }

    fn encode_worker(&self, encoder: &mut DescriptorEncoder) -> Fmt {
        let (connectors, tasks) = self.counts();
        let w = "kafka_connect_connect_worker_metrics_";
        let none = Vec::new;
        family(
            encoder,
            &format!("{w}connector_count"),
            "The number of connectors run in this worker.",
            [(none(), Sample::Gauge(connectors as f64))],
        )?;
        family(
            encoder,
            &format!("{w}task_count"),
            "The number of tasks run in this worker.",
            [(none(), Sample::Gauge(tasks as f64))],
        )?;
        let names = [
            "connector_startup_attempts_total",
            "connector_startup_success_total",
            "connector_startup_failure_total",
            "task_startup_attempts_total",
            "task_startup_success_total",
            "task_startup_failure_total",
        ];
        for (name, slot) in names.iter().zip(&self.inner.startups) {
            let v = slot.load(Relaxed);
            family(
                encoder,
                &format!("{w}{name}"),
                "Starts this worker attempted, and how they ended.",
                [(none(), Sample::Count(v))],
            )?;
        }
        // Ours: automatic restarts (auto.restart.enable).
        let (attempts, gave_up) = self.auto_restarts();
        family(
            encoder,
            &format!("{w}auto_restart_attempts_total"),
            "Automatic restarts of failed connectors and tasks this worker tried (auto.restart.enable).",
            [(none(), Sample::Count(attempts))],
        )?;
        family(
            encoder,
            &format!("{w}auto_restart_gave_up_total"),
            "Failed connectors and tasks whose automatic restarts gave up (auto.restart.max.attempts).",
            [(none(), Sample::Count(gave_up))],
        )?;
        Ok(())
    }

    /// `connect-worker-rebalance-metrics`, once a rebalance completed.
    fn encode_rebalance(&self, encoder: &mut DescriptorEncoder) -> Fmt {
        let Some(r) = self.rebalance().snapshot() else {
            return Ok(());
        };
        let w = "kafka_connect_connect_worker_rebalance_metrics_";
        let none = Vec::new;
        family(
            encoder,
            &format!("{w}info"),
            "The group sub-protocol in use and the leader's URL (connect-protocol, leader-name).",
            [(
                vec![("connect_protocol", r.protocol), ("leader_name", r.leader)],
                Sample::Gauge(1.0),
            )],
        )?;
        let gauges = [
            ("epoch", "The group generation.", r.epoch as f64),
            (
                "rebalancing",
                "Whether a rebalance is under way (1) or not (0).",
                if r.rebalancing { 1.0 } else { 0.0 },
            ),
            (
                "rebalance_avg_time_ms",
                "The average time a rebalance took, in milliseconds.",
                r.avg_ms.unwrap_or(f64::NAN),
            ),
            (
                "rebalance_max_time_ms",
                "The longest time a rebalance took, in milliseconds.",
                r.max_ms.map_or(f64::NAN, |m| m as f64),
            ),
            (
                "time_since_last_rebalance_ms",
                "Milliseconds since the last rebalance completed.",
                r.since_last.map_or(f64::NAN, |d| d.as_millis() as f64),
            ),
        ];
        for (name, help, value) in gauges {
            family(
                encoder,
                &format!("{w}{name}"),
                help,
                [(none(), Sample::Gauge(value))],
            )?;
        }
        family(
            encoder,
            &format!("{w}completed_rebalances_total"),
            "Rebalances this worker completed.",
            [(none(), Sample::Count(r.completed))],
        )
    }

    fn encode_connectors(&self, encoder: &mut DescriptorEncoder) -> Fmt {
        let connectors: Vec<_> = Self::lock(&self.inner.connectors)
            .iter()
            .map(|(n, m)| (n.clone(), m.clone()))
            .collect();
        family(
            encoder,
            "kafka_connect_connector_metrics_info",
            "A connector's class and type (connector-metrics), as labels.",
            connectors.iter().map(|(name, meta)| {
                let kind = match meta.kind {
                    TaskKind::Source => "source",
                    TaskKind::Sink => "sink",
                };
                (
                    vec![
                        ("connector", name.clone()),
                        ("connector_class", meta.class.clone()),
                        ("connector_type", kind.to_string()),
                    ],
                    Sample::Gauge(1.0),
                )
            }),
        )?;
        let status = &self.inner.status;
        family(
            encoder,
            "kafka_connect_connector_status",
            "A connector's state (connector-metrics status), as a label.",
            connectors.iter().map(|(name, _)| {
                let state = status.connector(name).0;
                (
                    vec![("connector", name.clone()), ("status", state_label(state))],
                    Sample::Gauge(1.0),
                )
            }),
        )
    }

    fn encode_tasks(&self, encoder: &mut DescriptorEncoder) -> Fmt {
        let tasks = self.tasks();
        let status = &self.inner.status;
        family(
            encoder,
            "kafka_connect_connector_task_status",
            "A task's state (connector-task-metrics status), as a label.",
            tasks.iter().map(|(id, _, _)| {
                let mut labels = task_labels(id);
                labels.push(("status", state_label(status.task(id).0)));
                (labels, Sample::Gauge(1.0))
            }),
        )?;
        for (kind, name, help, value) in TASK_METRICS {
            task_family(encoder, &tasks, *kind, name, help, value)?;
        }
        // Ours: a call past task.stall.warn.ms, with its name as a label.
        let threshold = self.stall_threshold();
        family(
            encoder,
            "kafka_connect_connector_task_metrics_stalled_seconds",
            "How long the task's poll, put or flush has run when past task.stall.warn.ms (0: not stalled); label call names it.",
            tasks.iter().map(|(id, _, m)| {
                let mut labels = task_labels(id);
                let stalled = m.calls.stalled(threshold);
                let call = stalled.map_or("none", |(c, _)| c.name());
                labels.push(("call", call.to_string()));
                let secs = stalled.map_or(0.0, |(_, ran)| ran.as_secs_f64());
                (labels, Sample::Gauge(secs))
            }),
        )?;
        let e = "kafka_connect_task_error_metrics_";
        for (i, name) in ERROR_COUNTERS.iter().enumerate() {
            task_family(
                encoder,
                &tasks,
                None,
                &format!("{e}{name}"),
                "The task's error handling counters (task-error-metrics).",
                |m| Sample::Gauge(m.error_counts()[i] as f64),
            )?;
        }
        Ok(())
    }
}

/// Kafka's `task-error-metrics` counters, in [`TaskMetrics::error_counts`]
/// order. Their names start with `total-` and do not end with it: gauges,
/// as the JMX exporter renders them.
const ERROR_COUNTERS: [&str; 7] = [
    "total_record_errors",
    "total_record_failures",
    "total_records_skipped",
    "total_retries",
    "total_errors_logged",
    "deadletterqueue_produce_requests",
    "deadletterqueue_produce_failures",
];

type TaskMetric = (
    Option<TaskKind>,
    &'static str,
    &'static str,
    fn(&TaskMetrics) -> Sample,
);

const SOURCE: Option<TaskKind> = Some(TaskKind::Source);
const SINK: Option<TaskKind> = Some(TaskKind::Sink);

/// Every per-task metric but the error counters: which tasks have it, its
/// name, its help and how to read it.
const TASK_METRICS: &[TaskMetric] = &[
    (
        None,
        "kafka_connect_connector_task_metrics_running_ratio",
        "Share of the time since the task started that it ran.",
        |m| Sample::Gauge(m.state_ratios().0),
    ),
    (
        None,
        "kafka_connect_connector_task_metrics_pause_ratio",
        "Share of the time since the task started that it was paused.",
        |m| Sample::Gauge(m.state_ratios().1),
    ),
    (
        None,
        "kafka_connect_connector_task_metrics_batch_size_avg",
        "Average records per poll or put.",
        |m| avg(&m.batch_size),
    ),
    (
        None,
        "kafka_connect_connector_task_metrics_batch_size_max",
        "Most records in one poll or put.",
        |m| max(&m.batch_size),
    ),
    (
        None,
        "kafka_connect_connector_task_metrics_offset_commit_avg_time_ms",
        "Average time an offset commit took.",
        |m| avg(&m.commit_time),
    ),
    (
        None,
        "kafka_connect_connector_task_metrics_offset_commit_max_time_ms",
        "Longest time an offset commit took.",
        |m| max(&m.commit_time),
    ),
    (
        None,
        "kafka_connect_connector_task_metrics_offset_commit_success_percentage",
        "Share of offset commits that succeeded.",
        |m| commit_share(m, true),
    ),
    (
        None,
        "kafka_connect_connector_task_metrics_offset_commit_failure_percentage",
        "Share of offset commits that failed.",
        |m| commit_share(m, false),
    ),
    (
        SOURCE,
        "kafka_connect_source_task_metrics_source_record_poll_total",
        "Records polled from the source system (before transforms).",
        |m| Sample::Count(m.source_record_poll_total()),
    ),
    (
        SOURCE,
        "kafka_connect_source_task_metrics_source_record_poll_rate",
        "Records polled per second, over about 30 s.",
        |m| Sample::Gauge(m.rate(Rated::SourcePoll)),
    ),
    (
        SOURCE,
        "kafka_connect_source_task_metrics_source_record_write_total",
        "Records written to Kafka (acknowledged, after transforms).",
        |m| Sample::Count(m.source_record_write_total()),
    ),
    (
        SOURCE,
        "kafka_connect_source_task_metrics_source_record_write_rate",
        "Records written per second, over about 30 s.",
        |m| Sample::Gauge(m.rate(Rated::SourceWrite)),
    ),
    (
        SOURCE,
        "kafka_connect_source_task_metrics_source_record_active_count",
        "Records polled and not yet acknowledged.",
        active,
    ),
    (
        SOURCE,
        "kafka_connect_source_task_metrics_source_record_active_count_max",
        "Most records polled and not yet acknowledged.",
        active_max,
    ),
    (
        SOURCE,
        "kafka_connect_source_task_metrics_poll_batch_avg_time_ms",
        "Average time a poll took.",
        |m| avg(&m.poll_batch_time),
    ),
    (
        SOURCE,
        "kafka_connect_source_task_metrics_poll_batch_max_time_ms",
        "Longest time a poll took.",
        |m| max(&m.poll_batch_time),
    ),
    (
        SINK,
        "kafka_connect_sink_task_metrics_sink_record_read_total",
        "Records read from Kafka (before transforms).",
        |m| Sample::Count(m.sink_record_read_total()),
    ),
    (
        SINK,
        "kafka_connect_sink_task_metrics_sink_record_read_rate",
        "Records read per second, over about 30 s.",
        |m| Sample::Gauge(m.rate(Rated::SinkRead)),
    ),
    (
        SINK,
        "kafka_connect_sink_task_metrics_sink_record_send_total",
        "Records given to put (after transforms).",
        |m| Sample::Count(m.sink_record_send_total()),
    ),
    (
        SINK,
        "kafka_connect_sink_task_metrics_sink_record_send_rate",
        "Records given to put per second, over about 30 s.",
        |m| Sample::Gauge(m.rate(Rated::SinkSend)),
    ),
    (
        SINK,
        "kafka_connect_sink_task_metrics_sink_record_active_count",
        "Records read and not yet committed.",
        active,
    ),
    (
        SINK,
        "kafka_connect_sink_task_metrics_sink_record_active_count_max",
        "Most records read and not yet committed.",
        active_max,
    ),
    (
        SINK,
        "kafka_connect_sink_task_metrics_sink_record_lag_max",
        "Most records the task is behind the end of any of its partitions.",
        |m| Sample::Gauge(m.lag_max.load(Relaxed) as f64),
    ),
    (
        SINK,
        "kafka_connect_sink_task_metrics_partition_count",
        "Topic partitions assigned to the task.",
        |m| Sample::Gauge(m.partition_count.load(Relaxed) as f64),
    ),
    (
        SINK,
        "kafka_connect_sink_task_metrics_offset_commit_completion_total",
        "Offset commits that completed.",
        |m| Sample::Count(m.offset_commits().0),
    ),
    (
        SINK,
        "kafka_connect_sink_task_metrics_offset_commit_completion_rate",
        "Offset commits completed per second, over about 30 s.",
        |m| Sample::Gauge(m.rate(Rated::CommitCompletion)),
    ),
    (
        SINK,
        "kafka_connect_sink_task_metrics_offset_commit_skip_total",
        "Offset commits skipped (nothing new to commit).",
        |m| Sample::Count(m.offset_commits().1),
    ),
    (
        SINK,
        "kafka_connect_sink_task_metrics_offset_commit_skip_rate",
        "Offset commits skipped per second, over about 30 s.",
        |m| Sample::Gauge(m.rate(Rated::CommitSkip)),
    ),
    (
        SINK,
        "kafka_connect_sink_task_metrics_put_batch_avg_time_ms",
        "Average time a put took.",
        |m| avg(&m.put_batch_time),
    ),
    (
        SINK,
        "kafka_connect_sink_task_metrics_put_batch_max_time_ms",
        "Longest time a put took.",
        |m| max(&m.put_batch_time),
    ),
    (
        None,
        "kafka_connect_task_error_metrics_last_error_timestamp",
        "When the last record failed, epoch milliseconds (0: never).",
        |m| Sample::Gauge(m.last_error_timestamp.load(Relaxed) as f64),
    ),
];

/// `offset-commit-success-percentage` (or failure): a share, 0 before the
/// first commit.
fn commit_share(m: &TaskMetrics, success: bool) -> Sample {
    let ok = m.commit_success.load(Relaxed);
    let failed = m.commit_failure.load(Relaxed);
    let part = if success { ok } else { failed };
    let all = ok + failed;
    Sample::Gauge(if all == 0 {
        0.0
    } else {
        part as f64 / all as f64
    })
}

fn active(m: &TaskMetrics) -> Sample {
    Sample::Gauge(m.active.load(Relaxed) as f64)
}

fn active_max(m: &TaskMetrics) -> Sample {
    Sample::Gauge(m.active_max.load(Relaxed) as f64)
}

/// Kafka's status attribute value: the state's name in lower case.
fn state_label(state: State) -> String {
    state.name().to_ascii_lowercase()
}

impl Collector for WorkerMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Fmt {
        self.encode_worker(&mut encoder)?;
        self.encode_rebalance(&mut encoder)?;
        self.encode_connectors(&mut encoder)?;
        self.encode_tasks(&mut encoder)
    }
}
