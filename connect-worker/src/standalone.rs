//! The standalone worker as a library function: what `connect-standalone`
//! runs, so a program that registers its own plugins gets the same command.
//!
//! ```text
//! connect-standalone WORKER.properties [CONNECTOR.properties ...]
//! ```
//!
//! As Kafka's: the worker file holds the worker keys, each connector file
//! one connector's config (with `name`). Source offsets go to
//! `offset.storage.file.filename`; the REST API listens on `listeners`
//! (default `http://127.0.0.1:8083`, loopback only).
//!
//! Unlike Kafka, `bootstrap.servers` may be left out: the worker then starts
//! an embedded Kafka (librdkafka's mock cluster, real protocol on
//! 127.0.0.1) and logs `bootstrap.servers=127.0.0.1:PORT` so kcat or any
//! client can watch the topics. It is for trying things out: data lives in
//! memory, is lost on exit, and each partition keeps only about 5 MiB.
//!
//! SIGINT or SIGTERM stops the REST server and every connector, flushing
//! records and committing offsets within `task.shutdown.graceful.timeout.ms`.
//!
//! ```no_run
//! use connect_runtime::rest::Loggers;
//! use connect_runtime::worker::Plugins;
//!
//! let plugins = Plugins::with_builtins(); // register your connectors here
//! let args: Vec<String> = std::env::args().skip(1).collect();
//! std::process::exit(connect_worker::standalone::run_standalone(args, plugins, Loggers::in_memory("INFO")));
//! ```

use std::path::Path;
use std::sync::Arc;

use connect_api::config::ConfigMap;

use connect_runtime::herder::{Herder, StandaloneHerder};
use connect_runtime::kafka::rdkafka_adapter::{MockKafka, RdKafkaCluster};
use connect_runtime::kafka::{ClientConfig, KafkaCluster};
use connect_runtime::offsets::FileOffsetStore;
use connect_runtime::properties::load_properties;
use connect_runtime::rest::{Loggers, RestServer};
use connect_runtime::status::TargetState;
use connect_runtime::worker::{Plugins, Worker, WorkerConfig};

use crate::cli::{failure, run_command, shutdown_signal, usage, CommandFailure, EXIT_FAILURE};

const USAGE: &str = "usage: connect-standalone WORKER.properties [CONNECTOR.properties ...]";

/// Run the standalone worker with `args` (the command's arguments, without
/// the program name) on a new tokio runtime until SIGINT/SIGTERM; returns
/// the process exit code ([`EXIT_OK`](crate::cli::EXIT_OK), [`EXIT_FAILURE`],
/// [`EXIT_USAGE`](crate::cli::EXIT_USAGE)).
/// Errors are logged through `tracing`.
pub fn run_standalone(args: Vec<String>, plugins: Plugins, loggers: Loggers) -> i32 {
    run_command(run(args, plugins, loggers, shutdown_signal()))
}

/// Worker and connector files, read and checked before anything starts.
struct Setup {
    worker: WorkerConfig,
    worker_file: String,
    connectors: Vec<(String, ConfigMap)>,
}

fn load(args: &[String]) -> std::result::Result<Setup, CommandFailure> {
    let Some((worker_file, connector_files)) = args.split_first() else {
        return Err(usage(USAGE));
    };
    if worker_file == "--help" || worker_file == "-h" {
        return Err(usage(USAGE));
    }
    let props = load_properties(Path::new(worker_file)).map_err(usage)?;
    let worker = WorkerConfig::parse(&props)
        .map_err(|e| usage(format!("{worker_file}: invalid worker configuration: {e}")))?;
    let (unknown, deprecated) = worker.unknown_and_deprecated();
    for key in unknown {
        tracing::warn!("{worker_file}: unknown worker configuration key '{key}' is ignored (check its spelling)");
    }
    for key in deprecated {
        tracing::warn!("{worker_file}: '{key}' is deprecated and ignored, as in Kafka (internal converters are always schemaless JSON)");
    }
    if props.contains_key("plugin.path") {
        tracing::info!("{worker_file}: plugin.path is accepted and ignored: plugins are compiled into this binary and registered by name (see connect-worker/src/main.rs)");
    }
    // Kafka's standalone worker has no exactly-once source support (the key
    // is distributed mode's); asking for it is refused rather than ignored.
    if let Some(v) = props
        .get("exactly.once.source.support")
        .map(|v| v.trim())
        .filter(|v| *v != "disabled")
    {
        return Err(usage(format!(
            "{worker_file}: exactly.once.source.support={v}: exactly-once source support needs distributed mode (connect-distributed), as in Kafka; remove the key or set it to disabled"
        )));
    }
    if worker.offset_file().is_none_or(|f| f.trim().is_empty()) {
        return Err(usage(format!(
            "{worker_file}: Missing required configuration \"offset.storage.file.filename\" which has no default value (the file where source offsets are stored, e.g. /tmp/connect.offsets)"
        )));
    }
    let mut connectors = Vec::new();
    for file in connector_files {
        let config = load_properties(Path::new(file)).map_err(usage)?;
        let name = config
            .get("name")
            .map(|n| n.trim().to_string())
            .unwrap_or_default();
        if name.is_empty() {
            return Err(usage(format!("{file}: Missing required configuration \"name\": every connector file needs name=<connector name>")));
        }
        if connectors.iter().any(|(n, _)| *n == name) {
            return Err(usage(format!(
                "{file}: a connector named '{name}' is already defined by an earlier file"
            )));
        }
        connectors.push((name, config));
    }
    Ok(Setup {
        worker,
        worker_file: worker_file.clone(),
        connectors,
    })
}

/// Whatever must live as long as the worker (the embedded Kafka).
type KeepAlive = Option<Box<dyn std::any::Any + Send>>;

/// Topics the connector files name (`topic`, `topics`), pre-created in the
/// embedded Kafka with one partition (Kafka's broker default), so a
/// keyless demo keeps its line order.
fn demo_topics(connectors: &[(String, ConfigMap)]) -> Vec<String> {
    let mut topics = Vec::new();
    for (_, c) in connectors {
        for key in ["topic", "topics"] {
            if let Some(v) = c.get(key) {
                for t in connect_api::config::parse_list(v) {
                    if !t.is_empty() && !topics.contains(&t) {
                        topics.push(t);
                    }
                }
            }
        }
    }
    topics
}

fn connect_kafka(
    setup: &Setup,
) -> std::result::Result<(KeepAlive, Arc<dyn KafkaCluster>), CommandFailure> {
    match setup.worker.bootstrap_servers() {
        Some(servers) => {
            tracing::info!("using the Kafka cluster at bootstrap.servers={servers}");
            let mut base = ClientConfig::new();
            base.insert("bootstrap.servers".into(), servers);
            Ok((None, Arc::new(RdKafkaCluster::new(base))))
        }
        None => {
            let topics = demo_topics(&setup.connectors);
            let specs: Vec<(&str, i32)> = topics.iter().map(|t| (t.as_str(), 1)).collect();
            let mock = MockKafka::start(1, &specs)
                .map_err(|e| failure(format!("cannot start the embedded Kafka: {e}")))?;
            tracing::info!("bootstrap.servers={}", mock.bootstrap_servers());
            tracing::warn!(
                "{}: bootstrap.servers is not set, so this worker runs an embedded Kafka (librdkafka's mock cluster) for trying things out: data lives in memory and is lost on exit, and each partition keeps only about 5 MiB. Set bootstrap.servers to use a real cluster.",
                setup.worker_file
            );
            let cluster: Arc<dyn KafkaCluster> = Arc::new(mock.cluster());
            Ok((Some(Box::new(mock)), cluster))
        }
    }
}

/// Run until `stop` resolves; used by [`run_standalone`] with the signal
/// handler.
async fn run(
    args: Vec<String>,
    plugins: Plugins,
    loggers: Loggers,
    stop: impl std::future::Future<Output = ()>,
) -> std::result::Result<(), CommandFailure> {
    let setup = load(&args)?;
    let offsets_file = setup.worker.offset_file().unwrap_or_default().to_string();
    let offsets = FileOffsetStore::open(&offsets_file).map_err(|e| {
        usage(format!(
            "{}: offset.storage.file.filename={offsets_file}: {e}",
            setup.worker_file
        ))
    })?;
    let (_kafka, cluster) = connect_kafka(&setup)?;
    let worker = Worker::new(setup.worker.clone(), plugins, cluster, Arc::new(offsets));
    // The REST API and the command line's connectors both go through the
    // herder seam.
    let herder = StandaloneHerder::new(worker.clone());
    let rest = RestServer::start_all(Arc::new(herder.clone()), setup.worker.listeners(), loggers)
        .await
        .map_err(|e| failure(format!("{}: {e}", setup.worker_file)))?;
    for (name, config) in setup.connectors {
        if let Err(e) = herder
            .create_connector(&name, config, TargetState::Started)
            .await
        {
            let message = format!("cannot create connector '{name}': {}", e);
            rest.stop().await;
            worker.shutdown().await;
            return Err(failure(message));
        }
        tracing::info!(connector = %name, "connector created");
    }
    rest.set_ready();
    tracing::info!("worker started; stop it with Ctrl-C or SIGTERM");
    tokio::select! {
        _ = stop => {}
        why = herder.died() => {
            // Never serve a REST API over a herder that no longer works.
            rest.stop().await;
            worker.shutdown().await;
            return Err(failure(why));
        }
    }
    tracing::info!(
        "stopping: flushing records and committing offsets (press Ctrl-C again to exit at once)"
    );
    tokio::spawn(async {
        shutdown_signal().await;
        tracing::warn!("second signal: exiting without waiting for tasks to finish");
        std::process::exit(EXIT_FAILURE);
    });
    rest.stop().await;
    worker.shutdown().await;
    tracing::info!("worker stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::EXIT_USAGE;

    fn write(dir: &Path, name: &str, text: &str) -> String {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }

    #[test]
    fn bad_files_fail_fast_naming_key_and_file() {
        let dir = std::env::temp_dir().join(format!("standalone-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = "key.converter=JsonConverter\nvalue.converter=JsonConverter\noffset.storage.file.filename=/tmp/x\n";
        let bad = write(
            &dir,
            "bad.properties",
            &format!("{ok}offset.flush.interval.ms=soon\n"),
        );
        let e = load(std::slice::from_ref(&bad)).err().unwrap();
        assert_eq!(e.code, EXIT_USAGE);
        assert!(
            e.message.contains("offset.flush.interval.ms") && e.message.contains(&bad),
            "{}",
            e.message
        );
        let no_offsets = write(
            &dir,
            "no-offsets.properties",
            "key.converter=JsonConverter\nvalue.converter=JsonConverter\n",
        );
        let eos = write(
            &dir,
            "eos.properties",
            &format!("{ok}exactly.once.source.support=enabled\n"),
        );
        let e = load(std::slice::from_ref(&eos)).err().unwrap();
        assert!(
            e.code == EXIT_USAGE && e.message.contains("needs distributed mode"),
            "{}",
            e.message
        );
        let e = load(&[no_offsets]).err().unwrap();
        assert!(
            e.message.contains("offset.storage.file.filename"),
            "{}",
            e.message
        );
        let worker = write(&dir, "w.properties", ok);
        let nameless = write(&dir, "c.properties", "connector.class=FileStreamSource\n");
        let e = load(&[worker.clone(), nameless.clone()]).err().unwrap();
        assert!(
            e.message.contains(&nameless) && e.message.contains("name"),
            "{}",
            e.message
        );
        let e = load(&[
            worker.clone(),
            dir.join("missing").to_string_lossy().into_owned(),
        ])
        .err()
        .unwrap();
        assert!(e.message.contains("missing"), "{}", e.message);
        assert_eq!(load(&[]).err().unwrap().code, EXIT_USAGE);
        let c = write(&dir, "s.properties", "name=a\ntopic=t1\n");
        let d = write(&dir, "k.properties", "name=b\ntopics=t1, t2\n");
        let setup = load(&[worker, c, d]).unwrap();
        assert_eq!(demo_topics(&setup.connectors), ["t1", "t2"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
