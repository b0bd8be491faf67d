"""Small helpers shared by the command-line tests."""
import json

from solvers.app.cli import main as cli


def write_spec(tmp_path, text, name="spec.toml"):
    """Write a spec file into tmp_path and return its path."""
    path = tmp_path / name
    path.write_text(text)
    return path


def run_cli(args, capsys):
    """Run ``scaling-odes ARGS`` in-process; return (exit code, stdout, stderr)."""
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def toml_list(x):
    """A (nested) list or tuple as a TOML array literal."""
    return "[" + ", ".join(toml_list(v) if isinstance(v, (list, tuple)) else json.dumps(v)
                           for v in x) + "]"


def erf_spec(eta, sigma_J, seed, alpha_max, basis, dps, digits) -> str:
    """A small erf K = M = 2, L = 4 spec on a 5-point linear grid (values inserted as given)."""
    return ERF_K2_L4 + (f"[training]\neta = {eta}\nsigma_J = {sigma_J}\nseed = {seed}\n"
                        f"[solve]\nalpha_max = {alpha_max}\nn_points = 5\nspacing = \"linear\"\n"
                        f"basis = {basis}\ndps = {dps}\ndigits = {digits}\n")


def erf_K2(L, N) -> str:
    """[model] and [data] of an erf K = M = 2 teacher-student spec, beta = 1 (values inserted as
    given, so a format field such as ``"{N}"`` may be passed through)."""
    return (f"\n[model]\nactivation = \"erf\"\nK = 2\nM = 2\n"
            f"[data]\nL = {L}\nbeta = 1.0\nN = {N}\n")


# [model] and [data] of the small specs several test modules start from
ERF_K2_L4 = erf_K2(4, 64)
LINEAR_L16 = """
[model]
activation = "linear"
K = 1
M = 1
[data]
L = 16
beta = 1.0
"""
