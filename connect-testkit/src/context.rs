//! A [`ConnectorContext`] for tests of a connector on its own: it keeps
//! what the connector asked of the worker.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use connect_api::connector::ConnectorContext;
use connect_api::ConnectError;

/// A connector context that records task reconfiguration requests and
/// raised errors, to pass to `Connector::start` in a test.
///
/// ```
/// use std::sync::Arc;
/// use connect_api::connector::ConnectorContext;
/// use connect_api::ConnectError;
/// use connect_testkit::FakeConnectorContext;
///
/// let ctx = Arc::new(FakeConnectorContext::default());
/// let given: Arc<dyn ConnectorContext> = ctx.clone();
/// given.request_task_reconfiguration();
/// given.raise_error(ConnectError::other("the source is gone"));
/// assert_eq!(ctx.reconfigurations(), 1);
/// assert_eq!(ctx.errors(), vec!["the source is gone".to_string()]);
/// ```
#[derive(Debug, Default)]
pub struct FakeConnectorContext {
    reconfigurations: AtomicUsize,
    errors: Mutex<Vec<String>>,
}

impl FakeConnectorContext {
    /// How many times the connector asked for new task configs.
    pub fn reconfigurations(&self) -> usize {
        self.reconfigurations.load(Ordering::SeqCst)
    }

    /// The errors the connector raised, as text, in order.
    pub fn errors(&self) -> Vec<String> {
        self.errors
            .lock()
            .map(|e| e.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }
}

impl ConnectorContext for FakeConnectorContext {
    fn request_task_reconfiguration(&self) {
        self.reconfigurations.fetch_add(1, Ordering::SeqCst);
    }
    fn raise_error(&self, error: ConnectError) {
        let mut errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        errors.push(error.to_string());
    }
}

/// What the worker does with a connector before any task runs: validate
/// `config`, `start` the connector, ask it for at most `max_tasks` task
/// configs, then `stop` it. Returns those task configs (what each task's
/// `start` gets) with the context the connector was given. A validation
/// error, a failed call, or more task configs than `max_tasks` is an
/// error naming it, as on a worker. Feed a config to
/// [`SourceHarness::start`](crate::SourceHarness::start) or
/// [`SinkHarness::start`](crate::SinkHarness::start) so a test covers the
/// connector's side too.
///
/// ```
/// # use std::sync::Arc;
/// # use async_trait::async_trait;
/// # use connect_api::config::{ConfigDef, ConfigMap};
/// # use connect_api::connector::{Connector, ConnectorContext};
/// # use connect_api::Result;
/// /// One task per table in `tables`.
/// #[derive(Default)]
/// struct Tables(Vec<String>);
/// #[async_trait]
/// impl Connector for Tables {
///     fn version(&self) -> String { "1".into() }
///     fn config_def(&self) -> ConfigDef { ConfigDef::new() }
///     async fn start(&mut self, config: &ConfigMap, _: Arc<dyn ConnectorContext>) -> Result<()> {
///         self.0 = config["tables"].split(',').map(str::to_string).collect();
///         Ok(())
///     }
///     async fn task_configs(&mut self, max: usize) -> Result<Vec<ConfigMap>> {
///         Ok(self.0.iter().take(max).map(|t| ConfigMap::from([("table", t.as_str())])).collect())
///     }
///     async fn stop(&mut self) -> Result<()> { Ok(()) }
/// }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let config = ConfigMap::from([("tables", "a,b,c")]);
/// let (tasks, _ctx) = connect_testkit::connector_task_configs(&mut Tables::default(), &config, 2).await.unwrap();
/// assert_eq!(tasks.len(), 2);
/// assert_eq!(tasks[1]["table"], "b");
/// # });
/// ```
pub async fn connector_task_configs(
    connector: &mut dyn connect_api::connector::Connector,
    config: &connect_api::ConfigMap,
    max_tasks: usize,
) -> connect_api::Result<(
    Vec<connect_api::ConfigMap>,
    std::sync::Arc<FakeConnectorContext>,
)> {
    let errors: Vec<String> = connector
        .validate(config)
        .into_iter()
        .flat_map(|r| {
            let name = r.name;
            r.errors.into_iter().map(move |e| format!("{name}: {e}"))
        })
        .collect();
    if !errors.is_empty() {
        return Err(ConnectError::config(
            "config",
            format!("the connector refused its config: {}", errors.join("; ")),
        ));
    }
    let context = std::sync::Arc::new(FakeConnectorContext::default());
    let given: std::sync::Arc<dyn ConnectorContext> = context.clone();
    connector.start(config, given).await?;
    let configs = connector.task_configs(max_tasks).await;
    connector.stop().await?;
    let configs = configs?;
    if configs.len() > max_tasks {
        return Err(ConnectError::other(format!(
            "the connector generated {} task configs, more than tasks.max ({max_tasks})",
            configs.len()
        )));
    }
    Ok((configs, context))
}
