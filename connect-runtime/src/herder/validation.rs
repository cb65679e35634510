//! Validating a connector config, as both herders do before they accept
//! one (Kafka's `AbstractHerder.validateConnectorConfig`).

use connect_api::config::{ConfigMap, ConfigReport};
use connect_api::connector::ConnectorType;
use connect_api::{ConnectError, ErrorKind, Result, SinkRecord, SourceRecord};
use connect_transforms::chain::TransformChain;

use crate::panics::contain_sync;
use crate::worker::{
    check_sink_topics, invalid_config, sink_connector_def, source_connector_def, Plugins,
};

/// Validate a connector config: one report per key of the connector's full
/// definition (common keys, kind keys, the plugin's own keys, and each
/// transform's keys), plus cross-key rules. Returns the connector's class
/// with the reports. Never fails for bad values; an unknown or missing
/// `connector.class` is an error.
pub fn validate_connector_config(
    plugins: &Plugins,
    config: &ConfigMap,
) -> Result<(String, Vec<ConfigReport>)> {
    let class = config
        .get("connector.class")
        .map(|s| s.trim())
        .unwrap_or("");
    if class.is_empty() {
        return Err(ConnectError::config(
            "connector.class",
            "Missing required configuration \"connector.class\" which has no default value.",
        ));
    }
    let plugin = plugins.connector(class)?;
    let base = match plugin.kind {
        ConnectorType::Source => source_connector_def(),
        ConnectorType::Sink => sink_connector_def(),
    };
    let mut reports = base.validate(config);
    // Plugin code: a panic in it is an error of this request (a 500, as
    // Kafka answers when `validate` throws), never a dropped connection.
    let own = contain_sync(format!("connector {class}: validate"), || {
        Ok(plugin.create().as_connector_ref().validate(config))
    })?;
    reports.extend(own);
    let chain_error = match plugin.kind {
        ConnectorType::Source => {
            TransformChain::<SourceRecord>::from_config(config, plugins.transforms()).err()
        }
        ConnectorType::Sink => {
            TransformChain::<SinkRecord>::from_config(config, plugins.transforms()).err()
        }
    };
    if let Some(e) = chain_error {
        let key = match e.kind() {
            ErrorKind::Config { key } => key.clone(),
            _ => "transforms".to_string(),
        };
        push_error(&mut reports, &key, e.to_string());
    }
    if plugin.kind == ConnectorType::Sink {
        if let Err((keys, msg)) = check_sink_topics(config) {
            for key in keys {
                push_error(&mut reports, key, msg.clone());
            }
        }
    }
    Ok((plugin.class.clone(), reports))
}

/// Accept `config` only when its validation finds no error: otherwise
/// Kafka's "Connector configuration is invalid" error listing every
/// problem as `key: message` (a 400 over REST).
pub fn check_connector_config(plugins: &Plugins, config: &ConfigMap) -> Result<()> {
    let (_, reports) = validate_connector_config(plugins, config)?;
    let errors: Vec<String> = reports
        .into_iter()
        .flat_map(|r| {
            r.errors
                .into_iter()
                .map(move |e| format!("{}: {e}", r.name))
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(invalid_config(&errors))
    }
}

fn push_error(reports: &mut Vec<ConfigReport>, key: &str, message: String) {
    match reports.iter_mut().find(|r| r.name == key) {
        Some(r) => r.errors.push(message),
        None => {
            let mut report = ConfigReport::new(key);
            report.errors.push(message);
            reports.push(report);
        }
    }
}
