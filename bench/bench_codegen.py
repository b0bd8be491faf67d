"""Printing a solver module on demand, from a cold process: CPU seconds per phase, this tree's
generator against the generator of another commit (default ``BASE``, main just before the
generation-speed changes: SymPy's cse twice, symbolic coefficient derivatives) in the same run.

Everything a default ``solve`` of a system not checked in needs is timed: the derivation, the
number module, the Taylor-jet module and compiling both (what importing them first costs).
Each (activation, K, M) and variant runs in a fresh Python process (nothing cached by SymPy),
one after the other; "total" is that process's whole CPU time (user + system, interpreter start
and imports included).  The other commit's ``derive/`` is taken with ``git archive`` into a
temporary folder and imported from there.  The load average is printed with each row: the
machine may be shared, so CPU time is the measure, not wall time.

    python bench/bench_codegen.py                      # erf K = M = 2 .. 6 against BASE
    python bench/bench_codegen.py erf:3:3 erf:4:4 --base main
    python bench/bench_codegen.py erf:6:6 --no-base    # this tree only
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from table import header, row

ROOT = Path(__file__).resolve().parents[1]
BASE = "ac72d38"

CHILD = r"""
import json, sys, time
src, act, K, M = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, src)
t0 = time.process_time()
try:
    from derive.codegen import jet_printer as taylor, module_printer as codegen
except ImportError:         # a base tree from before the code-generation subpackage
    from derive import codegen, taylor
from derive.keys import SystemKey
assert codegen.__file__.startswith(src), codegen.__file__
key = SystemKey(act, K, M)
times, t = {"import": time.process_time() - t0}, time.process_time()
def lap(name):
    global t
    now = time.process_time(); times[name] = now - t; t = now
codegen._derive(key); lap("derivation")
text = codegen.render(key); lap("printing")
jets = taylor.render_jets(key); lap("Taylor jets")
try:
    compile(text, "module.py", "exec"); compile(jets, "jets.py", "exec"); lap("compile")
except RecursionError:      # a chain of additions too deep for Python's compiler
    lap("compile"); times["compile_failed"] = True
print(json.dumps({"times": times, "size": [len(text), len(jets)]}))
"""


def run(src: Path, act: str, K: int, M: int) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, str(src), act, str(K), str(M)],
                         capture_output=True, text=True, check=True, cwd=src)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    res["wall"] = time.perf_counter() - wall
    return res


def checkout(ref: str, folder: Path) -> Path:
    """``derive/`` of ``ref`` under ``folder`` (git archive: no work tree touched)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "derive"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def _phases(res: dict) -> str:
    t = res["times"]
    compiled = "does not compile" if t.get("compile_failed") else f"{t['compile']:.1f}"
    return f"{t['derivation']:.1f} / {t['printing']:.1f} / {t['Taylor jets']:.1f} / {compiled}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("systems", nargs="*", help="activation:K:M (default erf K = M = 2..6)")
    parser.add_argument("--base", default=BASE, help=f"commit to compare with (default {BASE})")
    parser.add_argument("--no-base", action="store_true", help="time this tree only")
    args = parser.parse_args(argv)
    keys = [tuple(a.split(":")) for a in args.systems] or [("erf", k, k) for k in range(2, 7)]
    sys.path.insert(0, str(ROOT))
    from solvers.core.codegen_time import estimate_seconds
    with tempfile.TemporaryDirectory() as tmp:
        base = None if args.no_base else checkout(args.base, Path(tmp))
        header("system", f"{args.base}: total CPU (s)", "this tree: total CPU (s)",
               "this tree: derivation / printing / jets / compile (s)", "ratio", "estimate (s)",
               "module + jets (kB)", "wall (s)", "load")
        for act, K, M in keys:
            K, M = int(K), int(M)
            old = run(base, act, K, M) if base else None
            new = run(ROOT, act, K, M)
            failed = " (does not compile)" if old and old["times"].get("compile_failed") else ""
            row(f"{act} K={K} M={M}", f"{old['cpu']:.1f}{failed}" if old else "–", f"{new['cpu']:.1f}",
                _phases(new), f"{old['cpu'] / new['cpu']:.2f}" if old else "–",
                f"{estimate_seconds(act, K, M):.1f}",
                f"{new['size'][0] // 1000} + {new['size'][1] // 1000}", f"{new['wall']:.0f}",
                f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
