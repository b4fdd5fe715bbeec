#!/usr/bin/env bash
# `sluice query` output against the sqlite3 shell on the same query: time
# (median of 5) and peak memory, csv and json, at 20,000 and 200,000 people
# (peak memory should stay flat as the row count grows tenfold).
# Needs: a release build of sluice (built here), sqlite3, /usr/bin/time.
# Usage: bash Benchmarks/cli-streaming.sh
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product sluice >/dev/null
SLUICE="$(swift build -c release --show-bin-path)/sluice"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# Runs a command 5 times with stdout to /dev/null: "median-seconds max-peak-KB".
measure() {
    local times=() peak=0
    for _ in 1 2 3 4 5; do
        /usr/bin/time -f "%e %M" -o "$WORK/time" "$@" >/dev/null
        read -r seconds kilobytes <"$WORK/time"
        times+=("$seconds")
        ((kilobytes > peak)) && peak=$kilobytes
    done
    echo "$(printf '%s\n' "${times[@]}" | median) $peak"
}

echo "| rows out | format | sqlite3 shell | sluice query | time ratio | target | peak memory (sqlite3 / sluice) |"
echo "|---|---|---|---|---|---|---|"
for people in 20000 200000; do
    db="$WORK/people-$people.sqlite"
    "$SLUICE" seed --demo --people "$people" --db "$db" >/dev/null
    where="age >= 25"
    rows=$(sqlite3 "$db" "SELECT count(*) FROM person WHERE $where")
    for format in csv json; do
        read -r shell_seconds shell_peak < <(measure sqlite3 "-$format" "$db" "SELECT * FROM person WHERE $where ORDER BY id")
        read -r sluice_seconds sluice_peak < <(measure "$SLUICE" --db "$db" query person --where "$where" --format "$format")
        ratio=$(awk -v a="$sluice_seconds" -v b="$shell_seconds" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
        verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.2 ? "ok" : "MISSED") }')
        echo "| $rows | $format | ${shell_seconds} s | ${sluice_seconds} s | ${ratio}× | ≤ 1.2× ($verdict) | $((shell_peak / 1024)) MB / $((sluice_peak / 1024)) MB |"
    done
done
