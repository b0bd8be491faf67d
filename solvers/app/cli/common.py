"""Pieces every subcommand shares: the one error type, JSON output, progress bars."""
from __future__ import annotations

import functools
import json
import sys
from pathlib import Path


class CliError(Exception):
    pass


def progress_bar(total: float, desc: str):
    """A tqdm bar over α and the callback that advances it to a given α."""
    from tqdm import tqdm
    bar = tqdm(total=total, desc=desc, unit="α", disable=None, leave=False)
    state = {"t": 0.0}

    def tick(t):
        t = float(t)
        if t > state["t"]:
            bar.update(t - state["t"])
            state["t"] = t
    return bar, tick


def emit(result: dict, args) -> None:
    """Write a JSON result: ``-o FILE`` and/or ``--json`` (stdout); stdout when neither.

    A result holding NaN or +-inf is refused (one line naming where), never written."""
    from solvers.app.validate import first_non_finite
    where = first_non_finite(result)
    if where:
        raise CliError(f"the result is not finite at '{where}': refused (the inputs are "
                       f"outside the range where this computation holds)")
    text = json.dumps(result, indent=None if args.json else 1, allow_nan=False)
    if args.output:
        Path(args.output).write_text(text + "\n")
    if args.json or not args.output:
        sys.stdout.write(text + "\n")


def spec_command(sub, name: str, func, text: str, spec_help: str = "SPEC.toml"):
    """A subcommand that reads a spec and writes JSON (``-o FILE`` / ``--json``)."""
    p = sub.add_parser(name, help=text)
    p.add_argument("spec", help=spec_help)
    p.add_argument("-o", "--output", help="write JSON here")
    p.add_argument("--json", action="store_true", help="write compact JSON to stdout")
    p.set_defaults(func=func)
    return p


def json_command(load):
    """Decorator: ``compute(args, *load(args.spec)) -> dict`` becomes a subcommand that reads its
    spec with ``load``, writes the result with ``emit`` and exits 0 (the shape of every JSON
    subcommand, kept in one place)."""
    def wrap(compute):
        @functools.wraps(compute)
        def cmd(args) -> int:
            emit(compute(args, *load(args.spec)), args)
            return 0
        return cmd
    return wrap
