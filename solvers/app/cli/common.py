"""Pieces every subcommand shares: the one error type, JSON output, progress bars."""
from __future__ import annotations

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
    """Write a JSON result: ``-o FILE`` and/or ``--json`` (stdout); stdout when neither."""
    text = json.dumps(result, indent=None if args.json else 1)
    if args.output:
        Path(args.output).write_text(text + "\n")
    if args.json or not args.output:
        sys.stdout.write(text + "\n")
