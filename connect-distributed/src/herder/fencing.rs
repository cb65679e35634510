//! Zombie fencing for exactly-once source connectors (KIP-618), as Kafka's
//! `DistributedHerder` does it.
//!
//! Each source task produces with the transactional id
//! `<group.id>-<connector>-<task>`. When a connector's task configs change,
//! tasks of the previous generation may still run somewhere (a worker cut
//! off, a stop that hangs): zombies. Before any task of the new generation
//! takes over its producer, the leader fences every transactional id of the
//! previous generation (an `InitProducerId` for each bumps its epoch: the
//! zombie can no longer commit) and then writes a `tasks-fencing-<c>`
//! record with the new task count, so the next fencing knows how many ids
//! to fence. Skipped as Kafka skips it: no task count record yet (no
//! transactional producer ever ran), or one task before and one now (the
//! new task's own `init_transactions` fences the old one).
//!
//! A worker about to start an exactly-once task asks for the fencing
//! (itself when it leads, the leader's `PUT /connectors/{c}/fence`
//! otherwise), and after its producer took over its id checks that the
//! task configs it was started for are still the latest.

use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use connect_api::connector::ConnectorType;
use connect_api::{ConnectError, Result};
use connect_runtime::kafka::{Delivered, DeliverySink, KafkaError, Producer};
use connect_runtime::source::{TransactionSettings, ZombieFencing};
use connect_runtime::status::TaskId;

use super::{url_segment, InternalRequestError, Shared};
use crate::topics::config::ConfigRecord;

/// How long one fencing request to the leader may take (Kafka bounds it
/// with the REST client's request timeout).
const LEADER_TIMEOUT: Duration = Duration::from_secs(60);

/// How long fencing one transactional id may take.
const FENCE_TIMEOUT: Duration = Duration::from_secs(30);

impl Shared {
    /// The leader's zombie fencing of connector `name` (Kafka's
    /// `doFenceZombieSourceTasks`): fence the transactional ids of its
    /// previous task generation, then record the current task count. A
    /// worker that does not lead refuses with [`InternalRequestError::NotLeader`].
    /// Fencings run one at a time; one that finds the work done (no
    /// fencing pending any more) returns at once.
    pub(super) async fn fence_zombies(
        &self,
        name: &str,
    ) -> std::result::Result<(), InternalRequestError> {
        let view = self.view();
        if !view.is_leader {
            return Err(InternalRequestError::NotLeader(view.leader_url));
        }
        let _one_at_a_time = self.fencing.lock().await;
        self.configs.read_to_end().await.map_err(|e| {
            InternalRequestError::Failed(e.context(format!(
                "cannot read the config topic to its end before fencing the zombies of {name}"
            )))
        })?;
        let state = self.configs.state();
        let Some(config) = state.connector_config(name) else {
            return Err(InternalRequestError::Failed(ConnectError::not_found(
                format!("Connector {name} not found"),
            )));
        };
        let is_source = config
            .get("connector.class")
            .and_then(|c| c.as_deref())
            .and_then(|class| self.worker.plugins().connector(class.trim()).ok())
            .is_some_and(|p| p.kind == ConnectorType::Source);
        if !is_source {
            return Err(InternalRequestError::Failed(ConnectError::config(
                "connector.class",
                format!("Connector {name} is not a source connector"),
            )));
        }
        if !state.is_pending_fencing(name) {
            tracing::debug!(connector = %name,
                "no zombie fencing needed: the earlier task generations are fenced already");
            return Ok(());
        }
        let task_count = state.task_count(name).unwrap_or(0);
        let generation = state.task_config_generation(name);
        match state.task_count_record(name) {
            None => tracing::debug!(connector = %name,
                "first exactly-once start of the connector: nothing to fence, recording its task count"),
            Some(1) if task_count == 1 => tracing::debug!(connector = %name,
                "one task before and one now: the new task's producer fences the old one"),
            Some(previous) => {
                tracing::info!(connector = %name, tasks = previous,
                    "fencing the transactional producers of the previous task generation");
                self.fence_producers(name, previous)
                    .await
                    .map_err(InternalRequestError::Failed)?;
                self.configs
                    .read_to_end()
                    .await
                    .map_err(InternalRequestError::Failed)?;
                if self.configs.state().task_config_generation(name) != generation {
                    return Err(InternalRequestError::Failed(ConnectError::conflict(
                        "Fencing failed because new task configurations were generated for the connector",
                    )));
                }
            }
        }
        self.write_as_leader(vec![ConfigRecord::TaskCount {
            connector: name.to_string(),
            task_count,
        }])
        .await
        .map_err(|e| {
            InternalRequestError::Failed(e.context(format!(
                "cannot write the task count record of {name} after fencing"
            )))
        })
    }

    /// Fence the transactional ids of tasks `0..tasks` of `name`: a
    /// producer that takes over each id bumps its epoch, so whatever
    /// instance still holds it can no longer send or commit.
    async fn fence_producers(&self, name: &str, tasks: i32) -> Result<()> {
        let group = self.worker.config().group_id().to_string();
        // One after another: each is one InitProducerId round trip.
        for t in 0..tasks.max(0) as u32 {
            let id = TransactionSettings::transactional_id(&group, &TaskId::new(name, t));
            self.take_over_transactional_id(&id, FENCE_TIMEOUT)
                .await
                .map_err(|e| {
                    e.context(format!(
                        "cannot fence the transactional producer '{id}' of connector {name}"
                    ))
                })?;
        }
        Ok(())
    }

    /// A producer of the worker's that holds transactional id `id`: its
    /// `init_transactions` bumps the id's epoch, so whatever producer held
    /// it before can no longer send or commit.
    pub(super) async fn take_over_transactional_id(
        &self,
        id: &str,
        timeout: Duration,
    ) -> Result<Box<dyn Producer>> {
        let mut config = self.worker.config().producer_props();
        config.insert("transactional.id".into(), id.to_string());
        config.insert("enable.idempotence".into(), "true".into());
        let producer = self
            .worker
            .cluster()
            .producer(&config, Arc::new(NoDeliveries))?;
        producer
            .init_transactions(timeout)
            .await
            .map_err(ConnectError::from)?;
        Ok(producer)
    }

    /// Have the zombies of `name` fenced: here when this worker leads,
    /// by the leader's `PUT /connectors/{name}/fence` otherwise (signed
    /// with the session key, as every request between workers).
    async fn request_fencing(&self, name: &str) -> Result<()> {
        let leader = match self.fence_zombies(name).await {
            Ok(()) => return Ok(()),
            Err(InternalRequestError::NotLeader(Some(leader))) => leader,
            Err(InternalRequestError::NotLeader(None)) => {
                return Err(ConnectError::retriable(
                    "no leader is known (rebalancing) to fence the zombies of the connector's earlier tasks",
                ))
            }
            Err(InternalRequestError::Failed(e)) => return Err(e),
            Err(e) => return Err(ConnectError::other(e.to_string())),
        };
        // Signed over the empty body, as Java signs a request without one.
        let path = format!("connectors/{}/fence", url_segment(name));
        self.send_to_leader(&leader, "PUT", &path, Vec::new(), LEADER_TIMEOUT)
            .await
    }
}

/// Acknowledgements of a fencing producer, which sends nothing.
struct NoDeliveries;

impl DeliverySink for NoDeliveries {
    fn delivered(&self, _token: u64, _result: std::result::Result<Delivered<'_>, KafkaError>) {}
}

/// The herder's [`ZombieFencing`] for the worker's exactly-once tasks.
pub(super) struct HerderFencing(pub(super) Weak<Shared>);

impl HerderFencing {
    fn shared(&self) -> Result<Arc<Shared>> {
        self.0
            .upgrade()
            .ok_or_else(|| ConnectError::other("the herder has stopped"))
    }
}

#[async_trait]
impl ZombieFencing for HerderFencing {
    async fn fence(&self, task: &TaskId) -> Result<i64> {
        let shared = self.shared()?;
        // The generation the task was started for, taken before the
        // fencing (Kafka takes it when the herder starts the task).
        let generation = shared
            .configs
            .state()
            .task_config_generation(&task.connector)
            .map_or(-1, i64::from);
        shared.request_fencing(&task.connector).await?;
        Ok(generation)
    }

    async fn verify(&self, task: &TaskId, generation: i64) -> Result<()> {
        let shared = self.shared()?;
        shared.configs.read_to_end().await.map_err(|e| {
            e.context(format!(
                "cannot read the config topic to its end before starting source task {task}"
            ))
        })?;
        let now = shared
            .configs
            .state()
            .task_config_generation(&task.connector)
            .map_or(-1, i64::from);
        if now != generation {
            return Err(ConnectError::conflict(format!(
                "Cannot start source task {task} with exactly-once support as the connector has \
                 already generated a new set of task configs"
            )));
        }
        // Kafka's ownership check: a task revoked while its producer took
        // over its transactional id must not produce (it would fence the
        // instance the new owner starts).
        let owned = match shared.owned_tasks.lock() {
            Ok(t) => t.contains(task),
            Err(p) => p.into_inner().contains(task),
        };
        if !owned {
            return Err(ConnectError::conflict(format!(
                "Cannot start source task {task} as it has already been revoked from this worker"
            )));
        }
        Ok(())
    }
}
