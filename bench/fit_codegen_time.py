"""Fit the generation-time model of :mod:`solvers.core.codegen_time` to a table printed by
``bench/bench_codegen_pairs.py``.

erf's law ``t = c · n^e`` (n = KM + K(K+1)/2) is a least-squares line of log t on log n over
the erf/erf rows; the activation factors are a least-squares fit, over every other row except
linear/linear (its own power law), of

    log(t / erf law) = A[student kind] + B[teacher kind] + (C[student] + D[teacher]) log(n / 15)

with the erf entries fixed at 0.  Prints the constants to paste into codegen_time.py and every
row's measured time over the fitted estimate.

    python bench/bench_codegen_pairs.py > pairs.md && python bench/fit_codegen_time.py pairs.md
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solvers.core.codegen_time import activation_kind, n_state  # noqa: E402

KINDS = ("relu", "linear", "poly2", "poly")


def read(path):
    rows = []
    for line in Path(path).read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or not cells[2].isdigit():
            continue
        rows.append((cells[0], cells[1], int(cells[2]), int(cells[3]), float(cells[4])))
    return rows


def power_law(points):
    x = np.log([n for n, _ in points])
    y = np.log([t for _, t in points])
    e, logc = np.polyfit(x, y, 1)
    return math.exp(logc), e


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", help="output of bench/bench_codegen_pairs.py")
    args = parser.parse_args(argv)
    rows = read(args.table)
    erf = [(n_state(K, M), t) for s, u, K, M, t in rows if s == u == "erf"]
    lin = [(n_state(K, M), t) for s, u, K, M, t in rows if s == u == "linear"]
    c, e = power_law(erf)
    print(f"erf: {c:.4g} n^{e:.3f} over {len(erf)} rows")
    if len(lin) >= 2:
        cl, el = power_law(lin)
        print(f"linear/linear: {cl:.3g} n^{el:.3f} over {len(lin)} rows, measured / law "
              + ", ".join(f"{t / (cl * n ** el):.2f}" for n, t in lin))
    others = [r for r in rows if not (r[0] == r[1] and r[0] in ("erf", "linear"))]
    cols = [f"{p}_{k}" for p in "ABCD" for k in KINDS]
    X, y = [], []
    for s, u, K, M, t in others:
        n = n_state(K, M)
        ks, kt = activation_kind(s), activation_kind(u)
        row = np.zeros(len(cols))
        ln = math.log(n / 15)
        for p, kind, w in (("A", ks, 1.0), ("B", kt, 1.0), ("C", ks, ln), ("D", kt, ln)):
            if kind != "erf":
                row[cols.index(f"{p}_{kind}")] += w
        X.append(row)
        y.append(math.log(t / (c * n ** e)))
    X, y = np.array(X), np.array(y)
    used = X.any(axis=0)
    coef = np.zeros(len(cols))
    coef[used] = np.linalg.lstsq(X[:, used], y, rcond=None)[0]
    print("FACTOR_FIT = {\"erf\": (0.0, 0.0, 0.0, 0.0),")
    for k in KINDS:
        vals = ", ".join(f"{coef[cols.index(f'{p}_{k}')]:.3f}" for p in "ABCD")
        print(f"              \"{k}\": ({vals}),")
    ratios = np.exp(y - X @ coef)
    for (s, u, K, M, t), r in zip(others, ratios):
        print(f"  {s} / {u} K={K} M={M}: measured {t:.2f} s, measured / fit {r:.2f}")
    print(f"measured / fit over the {len(others)} pair rows: {ratios.min():.2f} .. {ratios.max():.2f}")
    for n, t in erf:
        print(f"  erf n={n}: measured / law {t / (c * n ** e):.2f}")


if __name__ == "__main__":
    main()
