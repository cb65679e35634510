#!/usr/bin/env bash
# Exactly-once source delivery (KIP-618) beside at-least-once: Kafka
# Connect 4.4.0's Java distributed worker against ours
# (connect-distributed), one after the other on the same real broker, each
# alone in a group of its own with `exactly.once.source.support=disabled`
# and then `=enabled` (`transaction.boundary=poll`, Kafka's default: one
# transaction per batch the task returns). The pipeline: FileStreamSource
# (RECORDS lines of ~90 bytes) -> JsonConverter with schemas -> a topic of
# one partition. Every run is counted by a read_committed reader of the
# topic (`head_to_head measure ... committed-source`; an exactly-once
# topic holds transaction markers the high watermark counts too), CPU and
# RSS of the worker process as benches/src/bin/head_to_head.rs says. Run
# by hand on a quiet machine, not in CI:
#
#   benches/head-to-head/exactly-once.sh [RECORDS] [ROUNDS]   (default 500000 3)
#
# Results: target/head-to-head/eos-results.tsv and a Markdown table on
# stdout; BENCHMARKS.md holds the figures.
set -euo pipefail

records=${1:-500000}
rounds=${2:-3}
bins=connect-distributed
# shellcheck source=prepare.sh
. "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
ours="$repo/target/release/connect-distributed"
results="$work/eos-results.tsv"
: >"$results"

# worker_config RUN PORT SUPPORT: a one-worker cluster of its own.
worker_config() {
    cat <<EOF
bootstrap.servers=$bootstrap
group.id=h2h-$1
config.storage.topic=h2h-$1-configs
offset.storage.topic=h2h-$1-offsets
status.storage.topic=h2h-$1-status
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
offset.flush.interval.ms=10000
listeners=http://127.0.0.1:$2
rest.advertised.host.name=127.0.0.1
plugin.path=$work/plugins
exactly.once.source.support=$3
EOF
}

# run_one NAME SUPPORT ROUND
run_one() {
    local name=$1 support=$2 round=$3 run port props connector command
    run="$name-$support-$round-$$"
    port=$("$tool" free-port)
    props="$work/run/$run.properties"
    connector="$work/run/$run.json"
    worker_config "$run" "$port" "$support" >"$props"
    printf '{"name":"eos-%s","config":{"connector.class":"FileStreamSource","tasks.max":"1","file":"%s","topic":"h2h-%s"}}\n' \
        "$run" "$input" "$run" >"$connector"
    case "$name" in
        java) java_command org.apache.kafka.connect.cli.ConnectDistributed "$props" ;;
        ours) command=("$ours" "$props") ;;
    esac
    log "round $round: $name, exactly.once.source.support=$support"
    H2H_CREATE="$connector" "$tool" measure "$name-$support" committed-source "$records" \
        "127.0.0.1:$port" "$bootstrap" "h2h-$run" - "$work/run/$run.log" -- "${command[@]}" |
        tee -a "$results"
}

rm -rf "$work/run"
mkdir -p "$work/run/java-logs"
for round in $(seq 1 "$rounds"); do
    for support in disabled enabled; do
        for name in java ours; do
            run_one "$name" "$support" "$round"
        done
    done
done

echo
echo "| worker | exactly.once.source.support | records | REST ready ms | first record ms | records/s | CPU-s per M records | CPU-s total | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|"
awk -F'\t' '{ split($1, w, "-"); printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", w[1], w[2], $3, $4, $5, $6, $7, $8, $9 }' "$results"
