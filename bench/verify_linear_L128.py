"""Verification of the linear-activation theory at full size: the three exact routes
(modes / companion / levels, solvers/theory/linear.py) must agree to ≥ 30 significant digits for
η ∈ {0.1, 0.5, 1}, β ∈ {0.3, 1, 1.5} at α = 2^j, j = -3..10 (σ_J = 0.1).

Prints one Markdown row per (β, η) pair as soon as it is done: agreement digits of companion and
levels against modes, the precision each route ended at (second run of exact_curve) and its wall
time, plus the 1-minute load average at the end of the pair.

    .venv/bin/python bench/verify_linear_L128.py [--L 128] [--pairs 1.5:1 1:0.5 ...]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from derive import spectra  # noqa: E402
from solvers.theory import linear as sl  # noqa: E402
from solvers.hierarchy.odes import agreement_digits  # noqa: E402

ETAS = ["1/10", "1/2", "1"]
BETAS = ["3/10", "1", "3/2"]
ALPHAS = [Fraction(2) ** j for j in range(-3, 11)]
DIGITS = 30


def run_pair(L, beta, eta):
    s = spectra.power_law(L, beta)
    res = {}
    for route in ("modes", "companion", "levels"):
        t = time.perf_counter()
        vals, meta = sl.exact_curve(s, eta, ALPHAS, route=route, sigma_J=Fraction(1, 10),
                                    digits=DIGITS)
        res[route] = (vals, meta, time.perf_counter() - t)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, default=128)
    ap.add_argument("--pairs", nargs="*", help="beta:eta pairs (fractions), default all nine")
    a = ap.parse_args(argv)
    pairs = ([tuple(Fraction(x) for x in p.split(":")) for p in a.pairs] if a.pairs
             else [(Fraction(b), Fraction(e)) for b in BETAS for e in ETAS])
    print(f"L = {a.L}, digits = {DIGITS}, alphas = 2^-3..2^10; levels start dps = "
          f"{sl.route_dps('levels', a.L, DIGITS)}\n")
    print("| β | η | companion vs modes | levels vs modes | dps (m / c / l) "
          "| time modes | time companion | time levels | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    ok = True
    for beta, eta in pairs:
        r = run_pair(a.L, beta, eta)
        m = r["modes"][0]
        dc = agreement_digits(m, r["companion"][0])
        dl_ = agreement_digits(m, r["levels"][0])
        ok &= dc >= DIGITS and dl_ >= DIGITS
        dps = " / ".join(str(r[k][1]["dps"]) for k in ("modes", "companion", "levels"))
        load = os.getloadavg()[0]
        print(f"| {beta} | {eta} | {min(dc, 99):.1f} | {min(dl_, 99):.1f} | {dps} | "
              f"{r['modes'][2]:.0f} s | {r['companion'][2]:.0f} s | {r['levels'][2]:.0f} s | "
              f"{load:.1f} |", flush=True)
    print("\n(99 = agreement beyond the 35 digits kept in the returned values)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
