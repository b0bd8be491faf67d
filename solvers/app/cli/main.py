"""Command line: ``scaling-odes solve | demo | regenerate`` and the subcommands of ``solvers/app/cli/``.

Every failure the user can cause ends in one line on stderr and exit status 2; never a traceback.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# `simulate` gives BLAS nothing to do (the steps run in the simulator's kernels, the records
# in einsum), but the OpenBLAS worker thread that numpy's import starts spins for ~0.1 s of CPU
# before it sleeps: 4 % of the command at its defaults.  So one BLAS thread there, unless the
# environment says otherwise; set before anything below imports numpy.
if sys.argv[1:2] == ["simulate"]:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from solvers.app.cli import bayes as cli_bayes
from solvers.app.cli import cache as cli_cache
from solvers.app.cli import compare as cli_compare
from solvers.app.cli import derive as cli_derive
from solvers.app.cli import figures as cli_figures
from solvers.app.cli import kernel as cli_kernel
from solvers.app.cli import linear as cli_linear
from solvers.app.cli import onestep as cli_onestep
from solvers.app.cli import plateau as cli_plateau
from solvers.app.cli import plrf as cli_plrf
from solvers.app.cli import simulate as cli_simulate
from solvers.app.cli.common import CliError, check_outputs, emit
from solvers.core import notices

# what `scaling-odes --help` says first (for users: no source folders)
DESCRIPTION = ("Order-parameter ODEs of online SGD in two-layer networks on power-law data, "
               "with the simulator and the baselines: one subcommand per computation "
               "(scaling-odes SUBCOMMAND --help).")


def cmd_solve(args) -> int:
    from solvers.app.solve import solve_spec
    from solvers.app.spec import load_spec
    from solvers.core.progress import Progress
    from solvers.app.sizing import announce, solve_estimate
    spec = load_spec(args.spec)           # sized there (sizing.size_solve): refused up front
    announce(solve_estimate(spec))
    # one labelled phase per run of the policy ("run 1/2: modes RODAS4 float64, rtol 1e-10")
    result = solve_spec(spec, progress=Progress("solve"))
    emit(result, args)
    return 0


def cmd_demo(args) -> int:
    from solvers.app.demo import check_alpha_max, plateau_label, run_demo
    check_alpha_max(args.alpha_max)          # before the progress bar
    res = run_demo(Path(args.out), alpha_max=args.alpha_max)
    print(f"wrote {res['png']} and {res['csv']}")
    for L, length in res["plateau_length"].items():   # the figure's legend, word for word
        print(plateau_label(L, res["alpha"], res["eps_g"][L], length))
    return 0


def cmd_regenerate(args) -> int:
    from solvers.core.registry import regenerate
    differing = regenerate(check=args.check)
    if args.check:
        if differing:
            names = ", ".join(p.name for p in differing)
            raise CliError(f"generated modules out of date: {names} (run `scaling-odes regenerate`)")
        print("generated modules are up to date")
    else:
        print(f"rewrote {len(differing)} module(s)" if differing else "nothing to rewrite")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="scaling-odes", description=DESCRIPTION)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("solve", help="integrate the order-parameter ODEs of a spec")
    s.add_argument("spec", help="SPEC.toml")
    s.add_argument("-o", "--output", help="write JSON here")
    s.add_argument("--json", action="store_true", help="write compact JSON to stdout")
    s.set_defaults(func=cmd_solve)
    d = sub.add_parser("demo", help="the paper's Figure 1 as PNG + CSV")
    d.add_argument("--out", default="demo-output", help="output directory")
    d.add_argument("--alpha-max", type=float, default=3500.0)
    d.set_defaults(func=cmd_demo)
    r = sub.add_parser("regenerate", help="rewrite the generated solver modules")
    r.add_argument("--check", action="store_true", help="fail if a checked-in module differs")
    r.set_defaults(func=cmd_regenerate)
    for module in (cli_linear, cli_plateau, cli_simulate, cli_bayes, cli_kernel, cli_figures,
                   cli_onestep, cli_plrf, cli_derive, cli_cache):
        module.register(sub)
    cli_compare.register(sub)
    return p


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line (``--help`` still prints the full usage)."""

    def error(self, message):
        msg = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {msg} (see `{self.prog} --help`)\n")


def _expected_errors() -> tuple:
    """The exceptions that are the user's problem (bad input, lost precision, a failed
    integration): one line and status 2.  Imported when an error is being reported, not at
    start-up (rk78 brings mpmath, ~50 ms of every command's start).  FloatingPointError is
    the simulator's "weights became non-finite" (a divergent run: the user's η)."""
    from solvers.app.spec import SpecError
    from solvers.hierarchy.precision import PrecisionLost   # SymPy-free: not odes
    from solvers.integrators.rk78 import IntegrationError
    return (CliError, SpecError, PrecisionLost, IntegrationError, ValueError, OSError,
            FloatingPointError)


def main(argv=None) -> int:
    import os
    import warnings
    parser = build_parser()
    args = parser.parse_args(argv)
    caught = []
    try:
        # warnings are collected, not printed: a failure is one line; a success mentions them
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_outputs(args)              # an unwritable -o / --out fails before any work
            from solvers.core.progress import heartbeat
            # notices (a system printed on demand) are printed at the end of a run that
            # succeeds and dropped from one that fails: its error line stands alone
            with heartbeat(f"scaling-odes {args.command}"), notices.holding():
                code = args.func(args)
        if caught:
            first = " ".join(str(caught[0].message).split())[:200]
            print(f"scaling-odes: warning: {len(caught)} warning(s) during the run; first: "
                  f"{caught[0].category.__name__}: {first}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        print("scaling-odes: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:        # anything else: still one line, never a traceback
        if isinstance(exc, _expected_errors()):
            msg = " ".join(str(exc).split())
            print(f"scaling-odes: error: {msg}", file=sys.stderr)
            return 2
        if os.environ.get("SCALING_ODES_DEBUG") == "1":
            raise
        msg = " ".join(str(exc).split())[:300]
        print(f"scaling-odes: error: internal error ({type(exc).__name__}: {msg}); "
              f"set SCALING_ODES_DEBUG=1 for the traceback", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
