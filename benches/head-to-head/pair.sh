#!/usr/bin/env bash
# Two builds of our standalone worker side by side on the head-to-head's
# sink pipeline (run.sh's configs): one topic of RECORDS records written
# once by the head-to-head source, then per round a bare rdkafka consumer
# (the baseline) and each binary draining the topic as a new consumer
# group, alternating. For before/after figures of a change in the same
# run; run by hand on a quiet machine, not in CI:
#
#   benches/head-to-head/pair.sh BEFORE_BINARY AFTER_BINARY [RECORDS] [ROUNDS]
#                                               (default 1000000 3)
#
# Build each binary with `cargo build --release -p connect-worker --bin
# connect-standalone` at its commit and copy it out of target/ first.
# Output: head_to_head's tab-separated lines (columns as run.sh's).
set -euo pipefail

before=${1:?usage: pair.sh BEFORE_BINARY AFTER_BINARY [RECORDS] [ROUNDS]}
after=${2:?usage: pair.sh BEFORE_BINARY AFTER_BINARY [RECORDS] [ROUNDS]}
records=${3:-1000000}
rounds=${4:-3}
bins=connect-standalone
H2H_NO_BUILD=1
# shellcheck source=prepare.sh
. "$(dirname "${BASH_SOURCE[0]}")/prepare.sh"
# run.sh's config writers (worker_config, source_config, sink_config).
eval "$(sed -n '/^worker_config() {/,/^}/p;/^source_config() {/,/^}/p;/^sink_config() {/,/^}/p' "$here/run.sh")"

rm -rf "$work/run"
mkdir -p "$work/run"
topic="pair-$$"
port=$("$tool" free-port)
worker_config fill "$port" >"$work/run/fill.properties"
source_config "$topic" fill >"$work/run/fill-connector.properties"
log "writing $records records to $topic"
"$tool" measure fill source "$records" "127.0.0.1:$port" "$bootstrap" "$topic" - \
    "$work/run/fill.log" -- "$after" "$work/run/fill.properties" "$work/run/fill-connector.properties" >/dev/null
for round in $(seq 1 "$rounds"); do
    "$tool" bare-consume "$bootstrap" "$topic" "$records" "$work/run/bare.out"
    for name in before after; do
        binary=$before
        [ "$name" = after ] && binary=$after
        run="$name-$round"
        port=$("$tool" free-port)
        worker_config "$run" "$port" >"$work/run/$run.properties"
        sink_config "$topic" "$work/run/$run.out" "$run" >"$work/run/$run-connector.properties"
        "$tool" measure "$name" sink "$records" "127.0.0.1:$port" "$bootstrap" "$topic" \
            "$work/run/$run.out" "$work/run/$run.log" -- \
            "$binary" "$work/run/$run.properties" "$work/run/$run-connector.properties"
    done
done
