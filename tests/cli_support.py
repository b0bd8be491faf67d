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
