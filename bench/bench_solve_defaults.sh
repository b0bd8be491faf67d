#!/usr/bin/env bash
# `scaling-odes solve` at its defaults on the default-solve specs (bench/specs/solve_*.toml), timed by
# /usr/bin/time -v: the verifying pair concurrently (default, two CPUs) and serially
# (SCALING_ODES_SERIAL=1), interleaved, the order alternating per repetition; every run under the
# benchmark lock, with the load average before it.  One Markdown row per run on stdout.
#
#   bench/bench_solve_defaults.sh [REPS] SPEC.toml [SPEC.toml ...]
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-2}; shift
lock=${BENCH_LOCK:-${TMPDIR:-/tmp}/scaling-odes-bench.lock}
out=$(mktemp -d)
echo "| spec | mode | wall [s] | user + sys CPU [s] | dps, agreement digits, steps (checking run) | load before |"
echo "|---|---|---:|---:|---|---|"
for spec in "$@"; do
  for rep in $(seq 1 "$reps"); do
    if (( rep % 2 )); then modes="concurrent serial"; else modes="serial concurrent"; fi
    for mode in $modes; do
      serial=0; [[ $mode == serial ]] && serial=1
      flock "$lock" bash -c "
        load=\$(cut -d' ' -f1-3 /proc/loadavg)
        SCALING_ODES_SERIAL=$serial /usr/bin/time -v -o '$out/time' \
          .venv/bin/scaling-odes solve '$spec' -o '$out/res.json' 2> '$out/err' || { cat '$out/err' >&2; exit 1; }
        python3 - '$out/time' '$out/res.json' '$spec' '$mode' \"\$load\" <<'EOF'
import json, re, sys
t = open(sys.argv[1]).read()
def field(name):
    return re.search(re.escape(name) + r': (.*)', t).group(1).strip()
wall = field('Elapsed (wall clock) time (h:mm:ss or m:ss)').split(':')
wall = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall)))
cpu = float(field('User time (seconds)')) + float(field('System time (seconds)'))
m = json.load(open(sys.argv[2]))['meta']
print(f\"| {sys.argv[3].split('/')[-1]} | {sys.argv[4]} | {wall:.1f} | {cpu:.1f} | \"
      f\"{m['dps']}, {m['agreement_digits']:.1f}, {m['n_steps']} | {sys.argv[5]} |\", flush=True)
EOF"
    done
  done
done
rm -rf "$out"
