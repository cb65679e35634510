//! A connector author tests exactly-once delivery without a broker: a
//! task that ends its own transactions (`transaction.boundary=connector`)
//! under `SourcePipeline::exactly_once`, on the in-memory Kafka.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use connect_api::source::{SourceTask, SourceTaskContext};
use connect_api::{ConfigMap, Record, Result, Schema, SourceMap, SourceRecord, Value};
use connect_testkit::{config, MemoryKafka, SourcePipeline, TransactionBoundary};

const WAIT: Duration = Duration::from_secs(30);

fn table() -> SourceMap {
    let mut p = SourceMap::new();
    p.insert("table".into(), "orders".into());
    p
}

/// Scans rows 0..20 of a table, one row per poll; commits every fifth
/// row and aborts the transaction holding row 12 (a row it found
/// inconsistent).
struct Scan {
    next: u64,
    ctx: Option<Arc<dyn SourceTaskContext>>,
}

#[async_trait]
impl SourceTask for Scan {
    async fn start(&mut self, _: &ConfigMap, ctx: Arc<dyn SourceTaskContext>) -> Result<()> {
        self.next = ctx
            .offset_storage_reader()
            .offset(&table())
            .and_then(|o| o["row"].as_u64())
            .map_or(0, |r| r + 1);
        self.ctx = Some(ctx);
        Ok(())
    }

    async fn poll(&mut self) -> Result<Vec<SourceRecord>> {
        if self.next >= 20 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            return Ok(Vec::new());
        }
        let row = self.next;
        self.next += 1;
        let mut offset = SourceMap::new();
        offset.insert("row".into(), row.into());
        let value = Value::from(format!("row {row}"));
        let record = SourceRecord::new(
            Arc::new(table()),
            offset,
            Record::new("orders", Some(Schema::string()), value),
        );
        let tx = self
            .ctx
            .as_ref()
            .and_then(|c| c.transaction_context())
            .expect("transaction.boundary=connector gives a transaction context");
        if row == 12 {
            tx.abort_transaction_at(&record);
        } else if row % 5 == 4 {
            tx.commit_transaction_at(&record);
        }
        Ok(vec![record])
    }

    async fn stop(&mut self) -> Result<()> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_transaction_context_connector_runs_exactly_once_in_memory() {
    let kafka = MemoryKafka::new();
    let mut p = SourcePipeline::new(&kafka, "scan", || Box::new(Scan { next: 0, ctx: None }))
        .exactly_once(TransactionBoundary::Connector);
    let strings = config(&[(
        "value.converter",
        "org.apache.kafka.connect.storage.StringConverter",
    )]);
    p.start(strings).await.unwrap();
    // Rows 10..=12 were aborted; 13 and 14 are committed with row 14.
    p.wait_for_offset(&table(), WAIT, |o| o["row"] == 19)
        .await
        .unwrap();
    let rows: Vec<String> = p
        .read_topic("orders")
        .unwrap()
        .into_iter()
        .map(|r| r.record.value.to_string())
        .collect();
    let want: Vec<String> = (0..20)
        .filter(|r| !(10..=12).contains(r))
        .map(|r| format!("row {r}"))
        .collect();
    assert_eq!(rows, want);
    // A restart resumes after the last committed row: nothing more.
    p.restart().await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    p.stop().await.unwrap();
    assert_eq!(p.read_topic("orders").unwrap().len(), want.len());
}
