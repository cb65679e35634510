//! The distributed worker as a library function: what the
//! `connect-distributed` command runs, so a program that registers its own
//! plugins gets the same command.
//!
//! ```text
//! connect-distributed WORKER.properties
//! ```
//!
//! As Kafka's `connect-distributed.sh`: one file with the worker keys
//! (`bootstrap.servers`, `group.id`, the three `*.storage.topic`s,
//! converters, `listeners`). Workers with the same `group.id` and topics
//! form one cluster; connectors are created through any worker's REST API.
//! `bootstrap.servers` is required (there is no embedded Kafka here: the
//! workers of a cluster must share a real one).
//!
//! SIGINT or SIGTERM stops this worker's connectors and tasks (flushing
//! and committing), leaves the group, so that its work moves at once, and
//! stops the REST server.
//!
//! ```no_run
//! use connect_runtime::rest::Loggers;
//! use connect_runtime::worker::Plugins;
//!
//! let plugins = Plugins::with_builtins(); // register your connectors here
//! let args: Vec<String> = std::env::args().skip(1).collect();
//! std::process::exit(connect_worker::distributed::run_distributed(args, plugins, Loggers::in_memory("INFO")));
//! ```

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use connect_api::config::ConfigMap;
use connect_runtime::kafka::rdkafka_adapter::RdKafkaCluster;
use connect_runtime::kafka::{ClientConfig, KafkaCluster};
use connect_runtime::offsets::{KafkaOffsetStore, KafkaOffsetTopics};
use connect_runtime::properties::load_properties;
use connect_runtime::rest::{ListenerSpec, Loggers, RestServer};
use connect_runtime::worker::{Plugins, Worker, WorkerConfig};

use connect_distributed::herder::{ConfigTopic, DistributedConfig, DistributedHerder, StatusTopic};
use connect_distributed::stores::{KafkaConfigLog, KafkaStatusStore};

use crate::cli::{failure, run_command, shutdown_signal, usage, CommandFailure, EXIT_FAILURE};

const USAGE: &str = "usage: connect-distributed WORKER.properties";

/// How long opening an internal topic may take (create, read to the end).
const OPEN_TIMEOUT: Duration = Duration::from_secs(60);

/// Keys of distributed mode the runtime's worker config does not know.
const DISTRIBUTED_KEYS: &[&str] = &[
    "group.id",
    "config.storage.topic",
    "config.storage.replication.factor",
    "offset.storage.topic",
    "offset.storage.partitions",
    "offset.storage.replication.factor",
    "status.storage.topic",
    "status.storage.partitions",
    "status.storage.replication.factor",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "rebalance.timeout.ms",
    "scheduled.rebalance.max.delay.ms",
    "connect.protocol",
    "worker.sync.timeout.ms",
    "worker.unsync.backoff.ms",
    "inter.worker.key.ttl.ms",
    "inter.worker.key.generation.algorithm",
    "inter.worker.signature.algorithm",
    "inter.worker.verification.algorithms",
    "client.id",
    "exactly.once.source.support",
    "request.timeout.ms",
    "retry.backoff.ms",
    "retry.backoff.max.ms",
    "security.protocol",
    "rest.advertised.host.name",
    "rest.advertised.port",
    "rest.advertised.listener",
];

/// Run a distributed worker with `args` (the command's arguments, without
/// the program name) on a new tokio runtime until SIGINT/SIGTERM; returns
/// the process exit code. Errors are logged through `tracing`.
pub fn run_distributed(args: Vec<String>, plugins: Plugins, loggers: Loggers) -> i32 {
    run_command(run(args, plugins, loggers))
}

/// The worker file, checked before anything starts.
struct Setup {
    file: String,
    worker: WorkerConfig,
    distributed: DistributedConfig,
    bootstrap: String,
    /// `host:port` other workers reach this one at (the worker id).
    advertised: String,
    /// `http` or `https`: how the other workers reach it.
    scheme: &'static str,
    listeners: Vec<String>,
}

fn load(args: &[String]) -> Result<Setup, CommandFailure> {
    let [file] = args else {
        return Err(usage(USAGE));
    };
    if file == "--help" || file == "-h" {
        return Err(usage(USAGE));
    }
    let props: ConfigMap = load_properties(Path::new(file)).map_err(usage)?;
    let invalid =
        |e: connect_api::ConnectError| usage(format!("{file}: invalid worker configuration: {e}"));
    let worker = WorkerConfig::parse(&props).map_err(invalid)?;
    let distributed = DistributedConfig::parse(props.iter()).map_err(invalid)?;
    let (unknown, deprecated) = worker.unknown_and_deprecated();
    for key in unknown
        .iter()
        .filter(|k| !DISTRIBUTED_KEYS.contains(&k.as_str()))
    {
        tracing::warn!(
            "{file}: unknown worker configuration key '{key}' is ignored (check its spelling)"
        );
    }
    for key in deprecated {
        tracing::warn!("{file}: '{key}' is deprecated and ignored, as in Kafka");
    }
    let bootstrap = worker.bootstrap_servers().ok_or_else(|| {
        usage(format!(
            "{file}: Missing required configuration \"bootstrap.servers\": the workers of a distributed cluster share one Kafka cluster"
        ))
    })?;
    let listeners = worker.listeners().to_vec();
    let advertised_scheme = props
        .get("rest.advertised.listener")
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty());
    let spec = |l: &String| ListenerSpec::parse("listeners", l).map(|spec| (l.clone(), spec));
    let parsed: Vec<(String, ListenerSpec)> = listeners
        .iter()
        .map(spec)
        .collect::<Result<_, _>>()
        .map_err(|e| usage(format!("{file}: {e}")))?;
    let (listener, listened) = match &advertised_scheme {
        None => parsed.first().cloned(),
        Some(scheme) if scheme == "http" || scheme == "https" => parsed
            .iter()
            .find(|(_, l)| l.scheme.as_str() == scheme)
            .cloned()
            .or_else(|| {
                tracing::warn!(
                    "{file}: rest.advertised.listener={scheme} but no {scheme} listener in listeners; advertising the first one"
                );
                parsed.first().cloned()
            }),
        Some(other) => {
            return Err(usage(format!(
                "{file}: Invalid value {other} for configuration rest.advertised.listener: String must be one of: http, https"
            )))
        }
    }
    .ok_or_else(|| {
        usage(format!(
            "{file}: listeners is empty: a distributed worker needs a REST listener, which the other workers reach it at"
        ))
    })?;
    let scheme = listened.scheme.as_str();
    let (host, port) = listened
        .addr
        .rsplit_once(':')
        .map(|(h, p)| (h.to_string(), p.to_string()))
        .unwrap_or((listened.addr.clone(), "8083".to_string()));
    if port == "0" {
        return Err(usage(format!(
            "{file}: listeners={listener}: a distributed worker needs a fixed port, which the other workers reach it at"
        )));
    }
    let host = props
        .get("rest.advertised.host.name")
        .filter(|h| !h.trim().is_empty())
        .cloned()
        .unwrap_or_else(|| {
            if host.is_empty() || host == "0.0.0.0" {
                tracing::warn!(listener = %listener,
                    "no rest.advertised.host.name: advertising 127.0.0.1, which workers on other hosts cannot reach; set rest.advertised.host.name in a multi-host cluster");
                "127.0.0.1".to_string()
            } else {
                host
            }
        });
    let port = props
        .get("rest.advertised.port")
        .filter(|p| !p.trim().is_empty())
        .cloned()
        .unwrap_or(port);
    Ok(Setup {
        file: file.clone(),
        worker,
        distributed,
        bootstrap,
        advertised: format!("{}:{}", host.trim(), port.trim()),
        scheme,
        listeners,
    })
}

async fn run(args: Vec<String>, plugins: Plugins, loggers: Loggers) -> Result<(), CommandFailure> {
    let setup = load(&args)?;
    let file = &setup.file;
    tracing::info!(
        "joining Connect group '{}' on bootstrap.servers={} as {}",
        setup.distributed.group.group_id,
        setup.bootstrap,
        setup.advertised
    );
    // Wrong SASL credentials (or a broker without PLAIN) would otherwise
    // surface only as librdkafka timeouts: check them once, up front.
    connect_distributed::group::check_brokers(&setup.distributed.group)
        .await
        .map_err(|e| failure(format!("{file}: cannot connect to Kafka: {e}")))?;
    let mut base = ClientConfig::new();
    base.insert("bootstrap.servers".into(), setup.bootstrap.clone());
    // The worker-level security keys apply to every client (the prefixed
    // producer./consumer./admin. keys, merged over this base, win).
    for key in connect_runtime::kafka::security::SECURITY_KEYS {
        if let Some(v) = setup.worker.originals().get(key) {
            base.insert(key.into(), v.clone());
        }
    }
    let cluster: Arc<dyn KafkaCluster> = Arc::new(RdKafkaCluster::new(base));
    let mut client = setup.worker.admin_props();
    let d = &setup.distributed;
    if d.exactly_once_source.fences() {
        // Source offsets are written in the tasks' transactions (and a
        // Java leader writes the config topic in its own): an aborted
        // transaction's records must not count.
        client.insert("isolation.level".into(), "read_committed".into());
    }
    let opened = |what: &str, e: connect_api::ConnectError| {
        failure(format!("{file}: cannot open the {what} topic: {e}"))
    };
    let offsets = KafkaOffsetStore::open(
        cluster.as_ref(),
        &client,
        &d.offsets.name,
        d.offsets.partitions,
        d.offsets.replication_factor,
        OPEN_TIMEOUT,
    )
    .await
    .map_err(|e| opened("offsets", e))?;
    let status = KafkaStatusStore::open(
        cluster.as_ref(),
        &client,
        &d.status.name,
        d.status.partitions,
        d.status.replication_factor,
        setup.advertised.clone(),
        OPEN_TIMEOUT,
    )
    .await
    .map_err(|e| opened("status", e))?;
    let configs = KafkaConfigLog::open(
        cluster.as_ref(),
        &client,
        &d.configs.name,
        d.configs.replication_factor,
        OPEN_TIMEOUT,
    )
    .await
    .map_err(|e| opened("config", e))?;
    let status: Arc<dyn StatusTopic> = Arc::new(status);
    let configs: Arc<dyn ConfigTopic> = Arc::new(configs);
    // The config topic is the record of what runs; the herder hands the
    // worker its units.
    let worker = Worker::with_status_store(
        setup.worker.clone(),
        plugins,
        cluster,
        Arc::new(offsets),
        status.clone(),
    );
    // Source connectors that name an offsets topic of their own get it,
    // created like the worker's.
    worker.set_offset_topics(Arc::new(KafkaOffsetTopics::new(
        worker.cluster().clone(),
        client.clone(),
        d.offsets.partitions,
        d.offsets.replication_factor,
        OPEN_TIMEOUT,
    )));
    let herder = DistributedHerder::new(worker, configs, status, setup.distributed.clone());
    let rest = RestServer::start_all(Arc::new(herder.clone()), &setup.listeners, loggers)
        .await
        .map_err(|e| failure(format!("{file}: {e}")))?;
    if let Err(e) = herder.start(&format!("{}://{}/", setup.scheme, setup.advertised)) {
        rest.stop().await;
        return Err(failure(format!("{file}: {e}")));
    }
    rest.set_ready();
    tracing::info!("worker started; stop it with Ctrl-C or SIGTERM");
    tokio::select! {
        _ = shutdown_signal() => {}
        _ = herder.stopped() => {
            rest.stop().await;
            return Err(failure(format!(
                "{file}: the worker left the Connect group for good or its herder failed (see the error above); its work is stopped"
            )));
        }
    }
    tracing::info!("stopping: flushing records, committing offsets and leaving the group (press Ctrl-C again to exit at once)");
    tokio::spawn(async {
        shutdown_signal().await;
        tracing::warn!("second signal: exiting without waiting for tasks to finish");
        std::process::exit(EXIT_FAILURE);
    });
    herder.shutdown().await;
    rest.stop().await;
    tracing::info!("worker stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::EXIT_USAGE;

    fn write(name: &str, text: &str) -> String {
        let dir = std::env::temp_dir().join(format!("distributed-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }

    const OK: &str = "bootstrap.servers=localhost:9092\ngroup.id=g\nconfig.storage.topic=c\noffset.storage.topic=o\nstatus.storage.topic=s\nkey.converter=JsonConverter\nvalue.converter=JsonConverter\nlisteners=http://0.0.0.0:8083\n";

    #[test]
    fn a_good_file_gives_the_advertised_address() {
        let f = write("ok.properties", OK);
        let s = load(&[f]).unwrap();
        assert_eq!(s.advertised, "127.0.0.1:8083");
        let f = write(
            "adv.properties",
            &format!("{OK}rest.advertised.host.name=w1.example\nrest.advertised.port=9000\n"),
        );
        assert_eq!(load(&[f]).unwrap().advertised, "w1.example:9000");
    }

    #[test]
    fn rest_advertised_listener_picks_the_listener_the_others_reach() {
        let two = OK.replace(
            "listeners=http://0.0.0.0:8083",
            "listeners=http://127.0.0.1:8083,https://127.0.0.1:8443",
        );
        let f = write("first.properties", &two);
        let s = load(&[f]).unwrap();
        assert_eq!(
            (s.scheme, s.advertised.as_str()),
            ("http", "127.0.0.1:8083")
        );
        let f = write(
            "https.properties",
            &format!("{two}rest.advertised.listener=HTTPS\n"),
        );
        let s = load(&[f]).unwrap();
        assert_eq!(
            (s.scheme, s.advertised.as_str()),
            ("https", "127.0.0.1:8443")
        );
        let f = write(
            "bad-adv.properties",
            &format!("{two}rest.advertised.listener=ftp\n"),
        );
        let e = load(&[f]).err().unwrap();
        assert!(
            e.message.contains("rest.advertised.listener"),
            "{}",
            e.message
        );
        let f = write(
            "bad-listener.properties",
            &OK.replace("http://0.0.0.0", "tcp://0.0.0.0"),
        );
        let e = load(&[f]).err().unwrap();
        assert!(e.message.contains("listeners"), "{}", e.message);
    }

    #[test]
    fn bad_files_fail_fast_naming_the_key_and_file() {
        for (drop, key) in [
            ("group.id=g\n", "group.id"),
            ("bootstrap.servers=localhost:9092\n", "bootstrap.servers"),
            ("status.storage.topic=s\n", "status.storage.topic"),
        ] {
            let f = write("bad.properties", &OK.replace(drop, ""));
            let e = load(std::slice::from_ref(&f)).err().unwrap();
            assert_eq!(e.code, EXIT_USAGE);
            assert!(
                e.message.contains(key) && e.message.contains(&f),
                "{}",
                e.message
            );
        }
        let f = write("port0.properties", &OK.replace(":8083", ":0"));
        let e = load(&[f]).err().unwrap();
        assert!(e.message.contains("fixed port"), "{}", e.message);
        assert_eq!(load(&[]).err().unwrap().code, EXIT_USAGE);
    }
}
