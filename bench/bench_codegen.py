"""Printing a solver module on demand, from a cold process: CPU seconds per phase, with
``derive.derivatives.diff`` (the default) against plain ``sympy.diff`` in the same run.

Each (activation, K, M) and variant runs in a fresh Python process (nothing cached by SymPy),
one after the other; the printed texts of both variants are compared (they must be identical).

    python bench/bench_codegen.py                 # erf K = M = 2, 3, 4
    python bench/bench_codegen.py erf:3:3 erf:6:6
"""
from __future__ import annotations

import json
import subprocess
import sys

CHILD = r"""
import json, sys, time
import sympy as sp
act, K, M, variant = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
from derive import codegen, derivatives, hierarchy, taylor
if variant == "sympy":
    plain = lambda expr, var, free=None: sp.diff(expr, var)
    codegen._diff = hierarchy.diff = derivatives.diff = plain
from derive.keys import SystemKey
key = SystemKey(act, K, M)
times, t = {}, time.process_time()
def lap(name):
    global t
    now = time.process_time(); times[name] = now - t; t = now
codegen._derive(key); lap("derivation")
text = codegen.render(key); lap("printing")
jets = taylor.render_jets(key); lap("Taylor jets")
import hashlib
print(json.dumps({"times": times, "sha": hashlib.sha256((text + jets).encode()).hexdigest()}))
"""


def run(act, K, M, variant):
    out = subprocess.run([sys.executable, "-c", CHILD, act, str(K), str(M), variant],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv):
    keys = [tuple(a.split(":")) for a in argv] or [("erf", 2, 2), ("erf", 3, 3), ("erf", 4, 4)]
    from solvers.core.codegen_time import estimate_seconds
    print("| system | sympy.diff: derivation / total (s) | derivatives.diff: derivation / total "
          "(s) | ratio (total) | estimate (s) | same text |")
    print("|---|---|---|---|---|---|")
    for act, K, M in keys:
        K, M = int(K), int(M)
        plain, fast = run(act, K, M, "sympy"), run(act, K, M, "fast")
        tp, tf = sum(plain["times"].values()), sum(fast["times"].values())
        print(f"| {act} K={K} M={M} | {plain['times']['derivation']:.2f} / {tp:.2f} | "
              f"{fast['times']['derivation']:.2f} / {tf:.2f} | {tp / tf:.2f} | "
              f"{estimate_seconds(act, K, M):.1f} | {plain['sha'] == fast['sha']} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
