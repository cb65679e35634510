#!/usr/bin/env bash
# A fresh sink draining a backlog: Kafka Connect 4.4.0's Java standalone
# worker against ours (connect-standalone), one after the other on the
# same real broker, each a new consumer group reading a topic of RECORDS
# records that is already full. Pipeline: the topic -> JsonConverter with
# schemas -> FileStreamSink, no SMTs, the worker defaults otherwise
# (offset.flush.interval.ms=60000). The topic is written first by our
# FileStreamSource (RECORDS lines of ~90 bytes, JsonConverter with
# schemas); a bare rdkafka consumer reads it once before the workers (the
# baseline, and the broker's __consumer_offsets exists before any worker's
# group joins). Run by hand on a quiet machine, not in CI:
#
#   benches/head-to-head/backlog.sh [RECORDS] [ROUNDS]   (default 200000 3)
#
# Columns as run.sh's (benches/src/bin/head_to_head.rs), plus "drain s":
# first to last record in the output file, and "drain records/s":
# RECORDS over that, the rate a user sees the backlog go down at. Results:
# target/head-to-head/backlog-results.tsv and a Markdown table on stdout.
set -euo pipefail

records=${1:-200000}
rounds=${2:-3}
bins=connect-standalone
# shellcheck source=prepare.sh
. "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
ours="$repo/target/release/connect-standalone"
results="$work/backlog-results.tsv"
: >"$results"

# worker_config RUN PORT: the worker properties both workers read.
worker_config() {
    cat <<EOF2
bootstrap.servers=$bootstrap
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
offset.storage.file.filename=$work/run/$1.offsets
listeners=http://127.0.0.1:$2
plugin.path=$work/plugins
EOF2
}

# run_one NAME DIRECTION TOPIC RUN: one worker, measured; the sink writes $work/run/RUN.out.
run_one() {
    local name=$1 direction=$2 topic=$3 run=$4 port props connector command
    port=$("$tool" free-port)
    props="$work/run/$run.properties"
    connector="$work/run/$run-connector.properties"
    worker_config "$run" "$port" >"$props"
    if [ "$direction" = source ]; then
        printf 'name=%s\nconnector.class=FileStreamSource\ntasks.max=1\nfile=%s\ntopic=%s\n' \
            "$run" "$input" "$topic" >"$connector"
    else
        printf 'name=%s\nconnector.class=FileStreamSink\ntasks.max=1\nfile=%s\ntopics=%s\n' \
            "$run" "$work/run/$run.out" "$topic" >"$connector"
    fi
    case "$name" in
        java) java_command org.apache.kafka.connect.cli.ConnectStandalone "$props" "$connector" ;;
        ours) command=("$ours" "$props" "$connector") ;;
    esac
    "$tool" measure "$name" "$direction" "$records" "127.0.0.1:$port" "$bootstrap" "$topic" \
        "$work/run/$run.out" "$work/run/$run.log" -- "${command[@]}"
}

rm -rf "$work/run"
mkdir -p "$work/run/java-logs"
for round in $(seq 1 "$rounds"); do
    topic="backlog-$round-$$"
    log "round $round: filling $topic with $records records"
    run_one ours source "$topic" "fill-$round" >/dev/null
    "$tool" bare-consume "$bootstrap" "$topic" "$records" "$work/run/bare-$round.out" >/dev/null
    # Alternate who drains first, so neither always meets a colder page cache.
    order="java ours"
    [ $((round % 2)) -eq 0 ] && order="ours java"
    for name in $order; do
        log "round $round: $name drains the backlog"
        run_one "$name" sink "$topic" "$name-sink-$round" | tee -a "$results"
    done
done

echo
echo "| worker | records | first record ms | records/s (10-90%) | CPU-s per M records | peak RSS MiB | done s | drain s | drain records/s |"
echo "|---|---|---|---|---|---|---|---|---|"
awk -F'\t' '{ drain = $10 - $5 / 1000; printf "| %s | %s | %s | %s | %s | %s | %s | %.2f | %.0f |\n", $1, $3, $5, $6, $7, $9, $10, drain, $3 / drain }' "$results"
