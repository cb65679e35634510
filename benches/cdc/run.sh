#!/usr/bin/env bash
# PostgreSQL CDC: Debezium 3.6.1's PostgreSQL connector on Kafka Connect
# 4.3.1's Java standalone worker against ours (connect-standalone with
# connect-postgres), on the same PostgreSQL and the same real broker, one
# after the other in one run. Run by hand on a quiet machine, not in CI:
#
#   benches/cdc/run.sh [EVENTS] [ROUNDS]     (default 200000 1)
#
# CDC_NO_BUILD=1 uses the release binaries as they are.
#
# Two measurements per worker and round:
#   snapshot:  a table of EVENTS rows read by the initial snapshot
#              (snapshot.mode=initial) -> EVENTS op=r events
#   streaming: EVENTS changes already in a replication slot created
#              beforehand (EVENTS/2 single-row inserts in transactions of 100,
#              then EVENTS/2 updates), read with snapshot.mode=no_data
# Records are Debezium's envelopes through the JSON converter with schemas.
# Each worker is measured from the outside by target/release/head_to_head
# (benches/src/bin/head_to_head.rs: steady rate and CPU-seconds of the
# whole process between 10% and 90% of the events, peak RSS). Results:
# target/cdc-bench/results.tsv (under CARGO_TARGET_DIR when set) and a Markdown table on stdout.
set -euo pipefail

events=${1:-200000}
rounds=${2:-1}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
work="$target/cdc-bench"
tool="$target/release/head_to_head"
ours="$target/release/connect-standalone"
dbz="$repo/tools/debezium-java"
log() { echo "cdc-bench: $*" >&2; }

if [ -z "${CDC_NO_BUILD:-}" ]; then
    log "building our worker and the measuring tool (release)"
    (cd "$repo" && cargo build --release --locked -q -p connect-worker -p connect-benches \
        --bin connect-standalone --bin head_to_head)
fi
log "resolving Kafka Connect 4.3.1 and Debezium 3.6.1 with Maven"
mvn -B -q -f "$dbz/pom.xml" package >/dev/null

rm -rf "$work"
mkdir -p "$work"
log "starting the real broker and PostgreSQL"
bootstrap=$("$repo/tools/real-kafka/broker.sh" start --dir "$work/broker" --owner $$ | sed -n 's/^bootstrap.servers=//p')
"$repo/tools/databases/databases.sh" start --dir "$work/db" >/dev/null
trap '"$repo/tools/real-kafka/broker.sh" stop --dir "$work/broker" >/dev/null 2>&1 || true; "$repo/tools/databases/databases.sh" stop --dir "$work/db" >/dev/null 2>&1 || true' EXIT
pgport=$(sed -n 's|^JDBC_TEST_POSTGRES_URL=.*127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/db/env")
psql_() { psql -q -h 127.0.0.1 -p "$pgport" -U postgres connect_test "$@"; }
log "broker at $bootstrap, PostgreSQL at port $pgport"

log "writing the snapshot table ($events rows)"
psql_ -c "CREATE TABLE snap (id INT PRIMARY KEY, customer TEXT NOT NULL, amount NUMERIC(10,2), placed TIMESTAMPTZ)" \
      -c "INSERT INTO snap SELECT g, 'customer ' || g, g * 0.25, '2026-01-01'::timestamptz + g * interval '1 second' FROM generate_series(1, $events) g"
psql_ -c "CREATE TABLE stream (id INT PRIMARY KEY, customer TEXT NOT NULL, amount NUMERIC(10,2), placed TIMESTAMPTZ)"

results="$work/results.tsv"
: >"$results"

worker_config() { # NAME PORT
    cat <<EOF
bootstrap.servers=$bootstrap
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
offset.storage.file.filename=$work/run/$1.offsets
offset.flush.interval.ms=10000
listeners=http://127.0.0.1:$2
plugin.path=$dbz/target/plugins
EOF
}

connector_config() { # PREFIX TABLE SNAPSHOT_MODE
    cat <<EOF
name=$1
connector.class=io.debezium.connector.postgresql.PostgresConnector
database.hostname=127.0.0.1
database.port=$pgport
database.user=postgres
database.password=unused
database.dbname=connect_test
topic.prefix=$1
plugin.name=pgoutput
slot.name=$1
publication.name=$1
publication.autocreate.mode=filtered
table.include.list=public.$2
snapshot.mode=$3
EOF
}

worker_command() { # NAME WORKER_PROPS CONNECTOR_PROPS
    case "$1" in
        java)
            command=(java -Xms256M -Xmx2G -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20
                -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent
                -XX:MaxInlineLevel=15 -Djava.awt.headless=true
                -Dlog4j2.configurationFile="$dbz/log4j2.properties"
                -Dkafka.logs.dir="$work/run/java-logs"
                -cp "$dbz/target/lib/*"
                org.apache.kafka.connect.cli.ConnectStandalone "$2" "$3")
            ;;
        ours) command=("$ours" "$2" "$3") ;;
    esac
}

run_one() { # NAME KIND ROUND
    local name=$1 kind=$2 round=$3 prefix port props connector table mode
    prefix="b${kind}${name}${round}"
    port=$("$tool" free-port)
    props="$work/run/$prefix-worker.properties"
    connector="$work/run/$prefix.properties"
    if [ "$kind" = snap ]; then
        table=snap mode=initial
    else
        table=stream mode=no_data
        # The changes wait in a slot created before them.
        psql_ -c "CREATE PUBLICATION $prefix FOR TABLE stream" \
              -c "SELECT pg_create_logical_replication_slot('$prefix', 'pgoutput')" >/dev/null
        psql_ -c "TRUNCATE stream" >/dev/null
        psql_ >/dev/null <<EOF
DO \$\$
BEGIN
  FOR b IN 0 .. ($events / 2 - 1) / 100 LOOP
    INSERT INTO stream SELECT g, 'customer ' || g, g * 0.25, now()
      FROM generate_series(b * 100 + 1, least(b * 100 + 100, $events / 2)) g;
    COMMIT;
  END LOOP;
END \$\$;
UPDATE stream SET amount = amount + 1;
EOF
    fi
    worker_config "$prefix" "$port" >"$props"
    connector_config "$prefix" "$table" "$mode" >"$connector"
    log "round $round: $name $kind"
    worker_command "$name" "$props" "$connector"
    "$tool" measure "$name-$kind" source "$events" "127.0.0.1:$port" "$bootstrap" \
        "$prefix.public.$table" "$work/run/$prefix.out" "$work/run/$prefix.log" -- "${command[@]}" |
        tee -a "$results"
    psql_ -c "SELECT pg_drop_replication_slot('$prefix')" >/dev/null 2>&1 || true
}

for round in $(seq 1 "$rounds"); do
    rm -rf "$work/run"
    mkdir -p "$work/run/java-logs"
    for kind in snap stream; do
        for name in java ours; do
            run_one "$name" "$kind" "$round"
        done
    done
done

echo
echo "| worker | events | REST ready ms | first event ms | events/s | CPU-s per M events | CPU-s total | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|"
awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $3, $4, $5, $6, $7, $8, $9 }' "$results"
