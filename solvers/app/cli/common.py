"""Pieces every subcommand shares: the one error type, JSON output, output checks, progress."""
from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
from pathlib import Path


class CliError(Exception):
    pass


def progress_bar(total: float, desc: str, label: str = ""):
    """A one-phase display over α (solvers.core.progress) and the callback that advances it to
    a given α: ``bar.close()`` when done.  Commands with several runs pass a
    :class:`solvers.core.progress.Progress` instead (see ``cmd_solve``)."""
    from solvers.core.progress import Progress
    bar = Progress(desc).phase(label, total)
    return bar, bar


def check_writable_file(path, option: str = "-o") -> None:
    """Refuse, before any work, an output file that cannot be written (CliError, one line):
    its directory must exist and take a new file, and the path must not be a directory."""
    p = Path(path)
    if p.is_dir():
        raise CliError(f"{option} {path}: is a directory, not a file")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise CliError(f"{option} {path}: the directory {parent} does not exist")
    if p.exists() and not os.access(p, os.W_OK):
        raise CliError(f"{option} {path}: the file exists and is not writable")
    _probe_directory(parent, f"{option} {path}")


def check_writable_dir(path, option: str = "--out") -> None:
    """Refuse an output directory that is a file or cannot be created / written (CliError)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise CliError(f"{option} {path}: exists and is not a directory")
    base = p
    while not base.exists():            # the first existing ancestor must take new entries
        if base.parent == base:
            break
        base = base.parent
    if not base.is_dir():
        raise CliError(f"{option} {path}: {base} is not a directory")
    _probe_directory(base, f"{option} {path}")


def _probe_directory(directory: Path, what: str) -> None:
    # os.access answers for the real uid and ignores read-only mounts; creating a file is the
    # test that cannot be wrong
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".scaling-odes-probe-"):
            pass
    except OSError as exc:
        raise CliError(f"{what}: cannot write to {directory} "
                       f"({exc.strerror or type(exc).__name__})") from None


def check_figure_file(path, option: str = "--plot") -> None:
    """Refuse, before any work, a figure path matplotlib cannot write: its suffix must name a
    format of ``savefig`` (the format follows the suffix) and the file must be writable."""
    from matplotlib.backend_bases import FigureCanvasBase
    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = Path(path).suffix.lstrip(".").lower()
    if suffix not in formats:
        got = f"the suffix '.{suffix}'" if suffix else "no suffix"
        raise CliError(f"{option} {path}: {got} names no figure format (use one of "
                       f"{', '.join('.' + f for f in sorted(formats))})")
    check_writable_file(path, option)


def check_outputs(args) -> None:
    """Every subcommand's output paths, checked before it computes anything."""
    out = getattr(args, "output", None)
    if out:
        check_writable_file(out, "-o")
    plot = getattr(args, "plot", None)
    if isinstance(plot, (str, os.PathLike)) and plot:
        check_figure_file(plot, "--plot")
    directory = getattr(args, "out", None)
    if isinstance(directory, (str, os.PathLike)) and directory:
        check_writable_dir(directory, "--out")


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
