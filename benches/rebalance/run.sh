#!/usr/bin/env bash
# Rebalance times (issue #15): three of our distributed workers
# (connect-distributed) against three of Kafka Connect 4.4.0's
# (org.apache.kafka.connect.cli.ConnectDistributed, built by
# tools/connect-java), on the same real broker, in the same run, the two
# sides alternating round by round. Run by hand on a quiet machine, not in CI:
#
#   benches/rebalance/run.sh [ROUNDS]           (default 3)
#
# REBALANCE_NO_BUILD=1 uses the release binaries and the Java build as they
# are. SESSION_MS (default 10000, Kafka's session.timeout.ms default),
# HEARTBEAT_MS (3000, Kafka's default), DELAY_MS
# (scheduled.rebalance.max.delay.ms, 0: lost work moves at once; Kafka's
# default is 300000) and POLL_MS (50) are passed to both sides alike.
#
# Each round of each side, in a fresh group with fresh internal topics and a
# fresh 3-partition data topic: 4 FileStreamSink connectors (tasks.max=3)
# and 2 FileStreamSource connectors (tasks.max=1): 6 connectors + 14 tasks =
# 20 units. Steps: start (3 workers at once), kill -9 of a follower, a join
# (2 -> 3), kill -9 of the leader, a join (2 -> 3); each timed until every
# unit is RUNNING on a live worker, polled through REST
# (benches/src/bin/rebalance.rs says exactly what each number is).
# Results: target/rebalance/results.tsv (raw), a Markdown table on stdout,
# worker logs under target/rebalance/<side>-<round>/w<N>/.
set -euo pipefail

rounds=${1:-3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
work="$repo/target/rebalance"
tool="$target/release/rebalance"
ours="$target/release/connect-distributed"
java_project="$repo/tools/connect-java"
log() { echo "rebalance: $*" >&2; }

if [ -z "${REBALANCE_NO_BUILD:-}" ]; then
    log "building our worker and the measuring tool (release)"
    (cd "$repo" && cargo build --release --locked -q -p connect-worker -p connect-benches \
        --bin connect-distributed --bin rebalance)
    log "building Kafka Connect 4.4.0's distributed worker with Maven (tools/connect-java)"
    mvn -q -B -f "$java_project/pom.xml" package >/dev/null
fi

mkdir -p "$work"
log "starting the real broker"
bootstrap=$("$repo/tools/real-kafka/broker.sh" start --dir "$work/broker" --owner $$ | sed -n 's/^bootstrap.servers=//p')
trap '"$repo/tools/real-kafka/broker.sh" stop --dir "$work/broker" >/dev/null 2>&1 || true' EXIT
log "broker at $bootstrap; session.timeout.ms=${SESSION_MS:-10000} heartbeat.interval.ms=${HEARTBEAT_MS:-3000} scheduled.rebalance.max.delay.ms=${DELAY_MS:-0}"

results="$work/results.tsv"
: >"$results"
for round in $(seq 1 "$rounds"); do
    # Alternate which side goes first.
    if [ $((round % 2)) = 1 ]; then sides="java ours"; else sides="ours java"; fi
    for side in $sides; do
        log "round $round: $side"
        "$tool" round "$side" "$round" "$bootstrap" "$work" "$ours" "$java_project" |
            tee -a "$results" || log "round $round of $side failed (see above); going on"
    done
done

echo
"$tool" summary "$results"
