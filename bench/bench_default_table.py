"""The default route against the old default route (``basis = "levels"``, ``dps = "auto"``,
``digits = 12``) on the four requests a new user tries first, in one run, one command:

    .venv/bin/python bench/bench_default_table.py [--reps R] [--min-cap S] [NAME ...]

Every request runs on its defaults and on the old default route, the order alternating from one
request (and repetition) to the next, after an untimed run of each route at alpha_max = 0.01
(the generated modules and kernel caches, so neither pays for them); L = 512 also runs on the modes/float64 route called
directly (``basis = "modes"``, ``dps = "float64"``, the same digits), which its default must
match within 1.2x.  The old route can take hours at large L: it is stopped after
``max(min_cap, 3 x the default's wall)`` seconds and its row then reads "stopped", the ratio
"≥ cap / default" (a lower bound).  Each run holds the benchmark lock (``BENCH_LOCK``, as
bench/bench_solve_defaults.sh) and records the load average before it.  Wall and CPU time
(user + system of the process and its children); on a loaded machine the CPU ratio is the one
to read.  One Markdown row per run, then a summary row per request.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCALING_ODES = str(Path(sys.executable).with_name("scaling-odes"))
LOCK = os.environ.get("BENCH_LOCK",
                      os.path.join(tempfile.gettempdir(), "scaling-odes-bench.lock"))

# name: (K, M, L, eta, alpha_max)
REQUESTS = {
    "K3M2-L16": (3, 2, 16, 0.5, 2000),
    "K4M4-L8": (4, 4, 8, 0.5, 500),
    "L128": (2, 2, 128, 0.5, 2000),
    "L512": (2, 2, 512, 0.5, 2000),
}
ROUTES = {
    "default": "",
    "old": 'basis = "levels"\ndps = "auto"\ndigits = 12\n',
    "modes-float64": 'basis = "modes"\ndps = "float64"\ndigits = 6\n',
}
# the old route at L = 512 is refused up front by the sizing model (about 351 h): the limit is
# raised for it so that it runs, and the cap stops it
ENV = {"old": {"SCALING_ODES_MAX_HOURS": "10000"}}


def spec_text(K, M, L, eta, alpha_max, solve: str) -> str:
    return (f'[model]\nactivation = "erf"\nK = {K}\nM = {M}\n[data]\nL = {L}\nbeta = 1.0\n'
            f"N = {max(1024, L)}\n[training]\neta = {eta}\n[solve]\nalpha_max = {alpha_max}\n"
            f"{solve}")


class _Lock:
    """The benchmark lock: one file (``BENCH_LOCK``, default in the temp directory) that every
    timed run holds, so two benchmarks never share the CPUs."""

    def __enter__(self):
        path = LOCK
        self.f = open(path, "a")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def run(spec: Path, cap: float | None, env_extra: dict | None = None) -> dict:
    """One ``scaling-odes solve`` under the lock; ``cap``: seconds before it is stopped."""
    out = spec.with_suffix(".json")
    env = dict(os.environ, SCALING_ODES_PROGRESS="off", **(env_extra or {}))
    with _Lock():
        load = open("/proc/loadavg").read().split()[:3]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        w0 = time.perf_counter()
        proc = subprocess.Popen([SCALING_ODES, "solve", str(spec), "-o", str(out)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        stopped = False
        try:
            _, err = proc.communicate(timeout=cap)
        except subprocess.TimeoutExpired:
            # the whole session: the verifying pair may run in a second process
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
            stopped = True
        wall = time.perf_counter() - w0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    row = {"wall": wall, "cpu": cpu, "load": " ".join(load), "stopped": stopped}
    if stopped:
        return row
    if proc.returncode:
        row["error"] = err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}"
        return row
    res = json.loads(out.read_text())
    row.update(res=res, route=res["meta"]["route"], digits=res["meta"]["digits"],
               verified=res["meta"]["agreement_digits"])
    return row


def agreement(a: dict, b: dict) -> float:
    """Largest relative difference of eps_g between two results on the same grid."""
    ea = [float(x) for x in a["res"]["eps_g"]]
    eb = [float(x) for x in b["res"]["eps_g"]]
    return max(abs(x - y) / abs(y) for x, y in zip(ea, eb))


def _cell(r: dict) -> str:
    if r.get("stopped"):
        return f"stopped at {r['wall']:.0f} s | ≥ {r['cpu']:.1f} | — | — | {r['load']}"
    if "error" in r:
        return f"{r['wall']:.1f} | {r['cpu']:.1f} | failed: {r['error'][:80]} | — | {r['load']}"
    return (f"{r['wall']:.1f} | {r['cpu']:.1f} | {r['route']} | {r['digits']} asked, "
            f"{r['verified']:.1f} verified | {r['load']}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", default=list(REQUESTS))
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--min-cap", type=float, default=300.0)
    ap.add_argument("--no-warm", action="store_true", help="time the first runs cold")
    args = ap.parse_args()
    print("| request | route asked | wall [s] | CPU [s] | route ran | digits | load before |")
    print("|---|---|---:|---:|---|---|---|")
    summary = []
    turn = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.names:
            K, M, L, eta, amax = REQUESTS[name]
            for rep in range(args.reps):
                order = ["default", "old"] if turn % 2 == 0 else ["old", "default"]
                if name == "L512":
                    order = order + ["modes-float64"] if turn % 2 == 0 else \
                        ["modes-float64"] + order
                turn += 1
                rows = {}
                if rep == 0 and not args.no_warm:
                    # generation and kernel caches filled first, untimed: both routes start warm
                    for what in order:
                        spec = Path(tmp) / f"{name}-{what}-warm.toml"
                        spec.write_text(spec_text(K, M, L, eta, 0.01, ROUTES[what]
                                                  + "n_points = 2\nspacing = \"linear\"\n"))
                        run(spec, 120.0, ENV.get(what))
                for what in order:
                    spec = Path(tmp) / f"{name}-{what}-{rep}.toml"
                    spec.write_text(spec_text(K, M, L, eta, amax, ROUTES[what]))
                    cap = None
                    if what == "old":
                        new = rows.get("default")
                        cap = max(args.min_cap, 3 * new["wall"]) if new else 2 * args.min_cap
                    rows[what] = run(spec, cap, ENV.get(what))
                    print(f"| {name} | {what} | {_cell(rows[what])} |", flush=True)
                summary.append((name, rows))
    print()
    print("| request | default wall / CPU [s] | old wall / CPU [s] | old / default (wall, CPU) "
          "| agreement | default / modes-float64 (wall, CPU) |")
    print("|---|---|---|---|---|---|")
    for name, rows in summary:
        d, o = rows["default"], rows["old"]
        if o.get("stopped"):
            ratio = f"≥ {o['wall'] / d['wall']:.1f}, ≥ {o['cpu'] / d['cpu']:.1f}"
            agree = "— (old stopped)"
        elif "res" in o and "res" in d:
            ratio = f"{o['wall'] / d['wall']:.1f}, {o['cpu'] / d['cpu']:.1f}"
            agree = f"{agreement(d, o):.1e}"
        else:
            ratio, agree = "—", "—"
        direct = "—"
        if "modes-float64" in rows and "res" in rows["modes-float64"]:
            f = rows["modes-float64"]
            direct = f"{d['wall'] / f['wall']:.2f}, {d['cpu'] / f['cpu']:.2f}" + \
                (f" (agree {agreement(d, f):.1e})" if "res" in d else "")
        print(f"| {name} | {d['wall']:.1f} / {d['cpu']:.1f} | {o['wall']:.1f} / {o['cpu']:.1f} "
              f"| {ratio} | {agree} | {direct} |", flush=True)


if __name__ == "__main__":
    main()
