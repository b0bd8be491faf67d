#!/bin/bash
# Same-run performance comparison of two trees of this repository (ABAB: alternating, so that
# the load of the shared machine drifts over both alike).  Each run imports the package from
# its tree (bench/before_after_one.py keeps the editable install out of the way).
#   git worktree add BEFORE_DIR 6395927; cp -r solvers derive bench AFTER_DIR
#   bench/before_after.sh BEFORE_DIR AFTER_DIR > ab.log
# Prints: side rep case wall_s cpu_s load1 eps_g(alpha_max) work
BEFORE=$1; AFTER=$2; PY=${PY:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python}
ONE=$(cd "$(dirname "$0")" && pwd)/before_after_one.py
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
for case in ${CASES:-levels modes}; do
  for rep in 1 2; do
    for side in before after; do
      dir=$BEFORE; [ "$side" = after ] && dir=$AFTER
      echo "$side rep$rep $(cd "$dir" && "$PY" "$ONE" $case 2>/dev/null | tail -1)"
    done
  done
done
