"""Command-line options and output shared by the HMC benchmarks (bench_bayes_hierarchical.py,
bench_bayes_restated.py): the sizes of a run, and rows printed and kept as they finish."""
import json


def add_run_options(ap, *, d, instances) -> None:
    """--d (one or more), --instances, --warmup, --samples, --seed and --out."""
    ap.add_argument("--d", type=int, nargs="+", default=d)
    ap.add_argument("--instances", type=int, default=instances)
    ap.add_argument("--warmup", type=int, default=400)
    ap.add_argument("--samples", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)


def keep(rows: list, row: dict, text: str, out) -> None:
    """Print a finished row and rewrite the JSON file ``out`` (if given) with all rows so far:
    a run cut short keeps what it finished."""
    rows.append(row)
    print(text, flush=True)
    if out:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1)
