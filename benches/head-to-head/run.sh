#!/usr/bin/env bash
# Head-to-head: Kafka Connect 4.4.0's Java standalone worker against ours
# (connect-standalone), the same pipeline on the same real broker, one after
# the other in one run; plus a bare rdkafka producer and consumer moving the
# same bytes (how close we are to the client's own cost). Run by hand on a
# quiet machine, not in CI:
#
#   benches/head-to-head/run.sh [RECORDS] [ROUNDS]     (default 1000000 1)
#
# H2H_NO_BUILD=1 uses the release binaries as they are.
#
# Pipelines (configs written below):
#   source: FileStreamSource (RECORDS lines of ~90 bytes) -> HoistField$Value
#           (a line becomes a struct: InsertField and ReplaceField need one)
#           -> InsertField$Value -> ReplaceField$Value -> JsonConverter with
#           schemas -> topic h2h-<worker>-<round>
#   sink:   that topic -> JsonConverter -> InsertField$Value ->
#           ReplaceField$Value -> FileStreamSink
# Each worker is measured from the outside by target/release/head_to_head
# (benches/src/bin/head_to_head.rs says what each column means). Results:
# target/head-to-head/results.tsv and a Markdown table on stdout.
#
# Java side: connect-runtime, connect-json, connect-transforms 4.4.0 (the
# classpath conformance/rest-java builds) and connect-file 4.3.1 on
# plugin.path: 4.4.0 of connect-file is not on Maven Central; the FileStream
# connectors did not change between the two but for one moved class, which
# compat/ forwards. JVM flags are the ones Kafka's
# bin/connect-standalone.sh and kafka-run-class.sh use.
set -euo pipefail

records=${1:-1000000}
rounds=${2:-1}
bins=connect-standalone
# shellcheck source=prepare.sh
. "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
ours="$repo/target/release/connect-standalone"

results="$work/results.tsv"
: >"$results"

# worker_config NAME PORT: the worker properties both workers read.
worker_config() {
    cat <<EOF
bootstrap.servers=$bootstrap
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
offset.storage.file.filename=$work/run/$1.offsets
offset.flush.interval.ms=10000
listeners=http://127.0.0.1:$2
plugin.path=$work/plugins
EOF
}

# source_config TOPIC SUFFIX; sink_config TOPIC OUTFILE SUFFIX (names differ per
# run so that no run waits for an earlier member of its consumer group).
source_config() {
    cat <<EOF
name=h2h-source-$2
connector.class=FileStreamSource
tasks.max=1
file=$input
topic=$1
transforms=hoist,insert,replace
transforms.hoist.type=org.apache.kafka.connect.transforms.HoistField\$Value
transforms.hoist.field=line
transforms.insert.type=org.apache.kafka.connect.transforms.InsertField\$Value
transforms.insert.static.field=origin
transforms.insert.static.value=head-to-head
transforms.replace.type=org.apache.kafka.connect.transforms.ReplaceField\$Value
transforms.replace.renames=line:message
EOF
}

sink_config() {
    cat <<EOF
name=h2h-sink-$3
connector.class=FileStreamSink
tasks.max=1
file=$2
topics=$1
transforms=insert,replace
transforms.insert.type=org.apache.kafka.connect.transforms.InsertField\$Value
transforms.insert.static.field=sink
transforms.insert.static.value=head-to-head
transforms.replace.type=org.apache.kafka.connect.transforms.ReplaceField\$Value
transforms.replace.exclude=origin
EOF
}

# worker_command NAME WORKER_PROPS CONNECTOR_PROPS: how each worker starts
# (into the array `command`).
worker_command() {
    case "$1" in
        java) java_command org.apache.kafka.connect.cli.ConnectStandalone "$2" "$3" ;;
        ours) command=("$ours" "$2" "$3") ;;
    esac
}

# run_one NAME DIRECTION TOPIC ROUND
run_one() {
    local name=$1 direction=$2 topic=$3 round=$4 port props connector out command
    port=$("$tool" free-port)
    props="$work/run/$name-$direction.properties"
    connector="$work/run/$name-$direction-connector.properties"
    out="$work/run/$name.sink.txt"
    rm -f "$work/run/$name.offsets"
    worker_config "$name-$direction" "$port" >"$props"
    if [ "$direction" = source ]; then
        source_config "$topic" "$name-$round" >"$connector"
    else
        sink_config "$topic" "$out" "$name-$round" >"$connector"
    fi
    log "round $round: $name $direction"
    worker_command "$name" "$props" "$connector"
    "$tool" measure "$name" "$direction" "$records" "127.0.0.1:$port" "$bootstrap" "$topic" \
        "$out" "$work/run/$name-$direction-$round.log" -- "${command[@]}" |
        tee -a "$results"
}

for round in $(seq 1 "$rounds"); do
    rm -rf "$work/run"
    mkdir -p "$work/run/java-logs"
    for name in java ours; do
        run_one "$name" source "h2h-$name-$round" "$round"
    done
    for name in java ours; do
        run_one "$name" sink "h2h-$name-$round" "$round"
    done
    log "round $round: bare rdkafka producer and consumer on our topic's bytes"
    "$tool" bare-produce "$bootstrap" "h2h-ours-$round" "h2h-bare-$round" "$records" | tee -a "$results"
    "$tool" bare-consume "$bootstrap" "h2h-ours-$round" "$records" "$work/run/bare.sink.txt" | tee -a "$results"
done

echo
echo "| worker | direction | records | REST ready ms | first record ms | records/s | CPU-s per M records | CPU-s total | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|"
awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }' "$results"
