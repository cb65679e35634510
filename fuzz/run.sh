#!/usr/bin/env bash
# Run every fuzz target for SECONDS (default 30) each, starting from the
# seeds in fuzz/seeds/<target> plus whatever corpus earlier runs left in
# fuzz/corpus/<target>. Exits non-zero on the first crash, leak or timeout;
# libFuzzer prints the failing input's path (fuzz/artifacts/<target>/...).
#   fuzz/run.sh [SECONDS] [TARGET...]
# Needs a nightly toolchain and cargo-fuzz (cargo install cargo-fuzz).
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-30}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(json_converter header_converters avro_registry_framing properties rest_bodies smt_lines)
cargo +nightly fuzz build
mkdir -p logs
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    echo "fuzz: $t for ${seconds}s"
    status=0
    cargo +nightly fuzz run "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
        >"logs/$t.log" 2>&1 || status=$?
    # The summary lines; the whole output is in fuzz/logs/<target>.log.
    grep -E '^(Done|stat::number_of_executed_units)|#[0-9]+[[:space:]]+(INITED|DONE)|ERROR|panicked|SUMMARY|Failing|Test unit written' \
        "logs/$t.log" || true
    if [ "$status" -ne 0 ]; then
        tail -40 "logs/$t.log"
        echo "fuzz: $t FAILED (exit $status); the input is under fuzz/artifacts/$t"
        exit 1
    fi
done
echo "fuzz: ${#targets[@]} targets ran ${seconds}s each without a crash"
