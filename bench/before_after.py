"""Same-run no-regression check of the headline timings: two trees of this repository, alternately.

    git worktree add BEFORE_DIR <commit>
    nice -n -5 .venv/bin/python bench/before_after.py BEFORE_DIR [AFTER_DIR] [--reps 3] [--cases a,b]
        [--short-reps 6]

(``nice -n -5`` only as root; AFTER_DIR defaults to this tree.)  Each run is a fresh process of
``bench/before_after_one.py CASE`` (this tree's copy, so the request is the same on both sides)
with its working directory in one tree, which it imports from; the package file each side
imported is printed once.  Runs alternate before/after, the first side swapping every pair
(ABBA...), so that a load drifting on the shared machine weighs on both alike.  Each side has its
own ``SCALING_ODES_CACHE``, warmed once before timing (the simulator's compiled kernel); the
generation cases get a fresh empty cache per run instead.  BLAS/OpenMP threads are pinned to one,
and bytecode is written and reused as Python does by default (``PYTHONDONTWRITEBYTECODE`` is
dropped).  A negative niceness is carried over to the process's scheduler autogroup (Linux).

Prints a Markdown table per case: the median CPU seconds of each side, their ratio after/before,
the spread of the per-pair ratios (min-max), the 1-minute load over the case's runs, and whether
both sides returned the same number.  CPU time is what counts on a shared machine; wall time is
shown beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from machine_info import cpu_name, load_avg  # noqa: E402

ONE = HERE / "before_after_one.py"
# every headline case, the short ones first (--short-reps pairs; about 3-12 s of CPU a run, the
# others 33-105 s: at --reps 3 all of them take about 21 min of CPU, warm-up included)
CASES = ["solve16", "simulate", "gen-erf4", "gen-relu4", "levels", "modes", "solve64"]
SHORT = {"solve16", "simulate", "gen-erf4", "gen-relu4"}
LABEL = {
    "levels": "level basis L = 64, flint RK7(8), 185 digits (row 2)",
    "solve64": "solve L = 64, levels, dps auto, 12 digits (row 4)",
    "solve16": "solve L = 16, 30 digits (row 6)",
    "simulate": "scaling-odes simulate at its defaults, whole command (row 9)",
    "gen-erf4": "generation erf K = M = 4, empty cache (row 12)",
    "gen-relu4": "generation relu K = M = 4, empty cache (row 13)",
    "modes": "modes, Figure 6, K = M = 40, L = N = 512 (row 8)",
}


def run_one(case: str, tree: Path, cache: Path, python: str) -> dict:
    env = dict(os.environ, SCALING_ODES_CACHE=str(cache), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    # Python's default, as users run it: imports reuse (and write) compiled bytecode
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    fresh = None
    if case.startswith("gen-"):
        fresh = Path(tempfile.mkdtemp(prefix="before_after_gen_"))
        env["SCALING_ODES_CACHE"] = str(fresh)
    try:
        done = subprocess.run([python, str(ONE), case], cwd=tree, env=env, capture_output=True,
                              text=True)
    finally:
        if fresh is not None:
            shutil.rmtree(fresh, ignore_errors=True)
    if done.returncode:
        raise SystemExit(f"{case} failed in {tree}:\n{done.stderr[-3000:]}")
    res = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(res["solvers"]).resolve().parents[1] != tree.resolve():
        raise SystemExit(f"{case} in {tree} imported {res['solvers']}")
    return res


def summary(case: str, pairs: list) -> str:
    cpu_b = [b["cpu"] for b, _ in pairs]
    cpu_a = [a["cpu"] for _, a in pairs]
    ratios = [a["cpu"] / b["cpu"] for b, a in pairs]
    loads = [r["load1"] for p in pairs for r in p]
    wall_b = statistics.median(b["wall"] for b, _ in pairs)
    wall_a = statistics.median(a["wall"] for _, a in pairs)
    same = all(_same(b["value"], a["value"]) for b, a in pairs)
    ratio = statistics.median(cpu_a) / statistics.median(cpu_b)
    return (f"| {LABEL[case]} | {len(pairs)} | {statistics.median(cpu_b):.2f} | "
            f"{statistics.median(cpu_a):.2f} | **{ratio:.3f}** | {min(ratios):.3f}–{max(ratios):.3f} "
            f"| {wall_b:.1f} / {wall_a:.1f} | {min(loads):.1f}–{max(loads):.1f} | "
            f"{'yes' if same else 'NO'} |")


def _autogroup_nice(nice: int) -> int | None:
    """Set the niceness of this process's scheduler autogroup (Linux) and return the previous
    one, or None where there is none or it cannot be set.  With autogroups every session weighs
    the same whatever its processes' nice values, so a ``nice -n -5`` alone would not move the
    share of a shared machine's CPUs these runs get."""
    group = Path("/proc/self/autogroup")
    try:
        before = int(group.read_text().split("nice")[1])
        group.write_text(str(nice))
    except (OSError, IndexError, ValueError):
        return None
    return before


def _same(x, y) -> bool:
    return x == y or abs(x - y) <= 1e-9 * max(abs(x), abs(y))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="the tree measured as 'before'")
    parser.add_argument("after", type=Path, nargs="?", default=HERE.parent,
                        help="the tree measured as 'after' (default: this one)")
    parser.add_argument("--reps", type=int, default=3, help="alternating pairs per case")
    parser.add_argument("--short-reps", type=int,
                        help=f"pairs of the short cases {sorted(SHORT)} (default: --reps)")
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated, from {','.join(CASES)} (default: all)")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter (with the dependencies) both sides run under")
    parser.add_argument("--log", type=Path, help="also append every run as a JSON line here")
    args = parser.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    short_reps = args.short_reps or args.reps
    if unknown or min(args.reps, short_reps) < 1:
        parser.error(f"unknown cases {unknown} (known: {CASES})" if unknown
                     else "--reps and --short-reps must be >= 1")
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    started = time.perf_counter()
    nice = os.nice(0)
    restore = _autogroup_nice(nice) if nice < 0 else None
    print(f"CPU: {cpu_name()}, {os.cpu_count()} CPUs; niceness {nice}"
          f"{' (its autogroup too)' if restore is not None else ''}; load {load_avg()}")
    for side, tree in trees.items():
        head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--", "solvers",
                                "derive"], capture_output=True, text=True).stdout.strip()
        print(f"{side}: {tree} at {head}{' (+ uncommitted changes)' if dirty else ''}")
    root = Path(tempfile.mkdtemp(prefix="before_after_"))
    caches = {side: root / side for side in trees}
    try:
        for side, tree in trees.items():
            caches[side].mkdir()
            t0 = time.perf_counter()
            res = run_one("warm", tree, caches[side], args.python)
            print(f"{side} imports {res['solvers']} (cache warmed in "
                  f"{time.perf_counter() - t0:.0f} s wall)")
        print()
        print("| case | pairs | CPU before (s, median) | CPU after (s, median) | after / before | "
              "per-pair ratios | wall before / after (s) | load1 | same result |")
        print("|---|---|---|---|---|---|---|---|---|", flush=True)
        for case in cases:
            pairs = []
            for rep in range(short_reps if case in SHORT else args.reps):
                order = ("before", "after") if rep % 2 == 0 else ("after", "before")
                res = {side: run_one(case, trees[side], caches[side], args.python) for side in order}
                if args.log:
                    with args.log.open("a") as f:
                        for side in order:
                            f.write(json.dumps(dict(res[side], side=side, rep=rep)) + "\n")
                pairs.append((res["before"], res["after"]))
            print(summary(case, pairs), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        if restore is not None:
            _autogroup_nice(restore)
    print(f"\ntotal {(time.perf_counter() - started) / 60:.1f} min wall; load {load_avg()}")


if __name__ == "__main__":
    main()
