"""Small helpers shared by the command-line tests (the spec texts are in specs.py)."""
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
