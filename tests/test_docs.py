"""The documentation: every code block in README.md and docs/ runs, the generated references
cover the code, and the site builds with warnings as errors.

* ```toml blocks parse; those that are whole specs are validated by the loader of the command
  that reads them (online-SGD spec, [bayes], [kernel]).
* ```python blocks are executed, each in a fresh namespace in a temporary directory.
* ```sh blocks: every `scaling-odes ...` line parses with the real argument parser and names
  existing files; every `make X` names a Makefile target.
"""
from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = [pytest.mark.contract]

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_reference",
                                                  ROOT / "docs" / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def blocks(lang: str):
    out = []
    for page in PAGES:
        for i, (tag, body) in enumerate(BLOCK.findall(page.read_text())):
            if tag == lang:
                out.append(pytest.param(body, id=f"{page.relative_to(ROOT)}-{i}"))
    return out


def test_every_block_has_a_language():
    untagged = [f"{p.relative_to(ROOT)}" for p in PAGES
                for tag, _ in BLOCK.findall(p.read_text()) if not tag]
    assert not untagged, f"code blocks without a language (so untested): {untagged}"


@pytest.mark.parametrize("body", blocks("toml"))
def test_toml_blocks(body, tmp_path):
    doc = tomllib.loads(body)                     # every block is valid TOML
    path = tmp_path / "spec.toml"
    path.write_text(body)
    if "training" in doc and "model" in doc:
        from solvers.app.spec import load_spec
        extra = [s for s in ("linear", "simulate", "plateau", "asymptotic", "sweep") if s in doc]
        load_spec(path, extra_sections=extra)
    elif "bayes" in doc:
        from solvers.app.cli import bayes
        bayes.load(path)
    elif "kernel" in doc:
        from solvers.app.cli import kernel
        kernel.load(path, with_mc="mc" in doc)


@pytest.mark.parametrize("body", blocks("python"))
def test_python_blocks(body, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCALING_ODES_SERIAL", "1")
    exec(compile(body, "<docs block>", "exec"), {"__name__": "__docs__"})


def _make_targets() -> set[str]:
    return set(re.findall(r"^([\w.-]+):", (ROOT / "Makefile").read_text(), re.M))


@pytest.mark.parametrize("body", blocks("sh"))
def test_shell_blocks(body):
    from solvers.app.cli.main import build_parser
    parser = build_parser()
    for line in body.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line)
        if words[0] == "make":
            assert set(w for w in words[1:] if "=" not in w) <= _make_targets(), line
            continue
        if words[0] == "cd":
            continue
        assert Path(words[0]).name in ("scaling-odes", "jupyter-execute"), line
        if Path(words[0]).name != "scaling-odes":
            continue
        argv = [w for w in words[1:] if "|" not in w and not w.startswith("[")]
        if "--help" in argv or "-h" in argv:
            argv = [w for w in argv if w not in ("--help", "-h")]
            if not argv:
                continue
        parser.parse_args(argv)                   # SystemExit on a wrong command line
        for w in argv:                            # SPEC.toml, SWEEP.toml are placeholders
            if w.endswith(".toml") and not Path(w).stem.isupper():
                assert (ROOT / w).exists(), f"{line}: {w} does not exist"


# ---- the generated references ------------------------------------------------------------

def test_spec_reference_lists_every_schema_and_key():
    ref = _hooks()
    sections = ref.SECTIONS + ref.discovered_schemas()
    listed = {(module, variable) for _, module, variable, _, _ in sections}
    for module_name in ("solvers.app.sections", "solvers.app.cli.bayes", "solvers.app.cli.kernel"):
        module = importlib.import_module(module_name)
        for name in dir(module):
            if name.endswith("SCHEMA") and isinstance(getattr(module, name), dict):
                assert (module_name, name) in listed, f"{module_name}.{name} is not documented"
    text = ref.spec_reference()
    for title, module, variable, subkey, _ in sections:
        schema = getattr(importlib.import_module(module), variable)
        if subkey:
            schema = schema[subkey]
        source = f"Source: `{module}.{variable}" + (f'["{subkey}"]' if subkey else "") + "`"
        section = next(s for s in text.split("### ") if source in s)
        for key in schema:
            assert f"| `{key}` |" in section, f"[{title}] {key} missing from the reference"


def test_spec_reference_describes_defaults_and_checks():
    ref = _hooks()
    text = ref.spec_reference()
    training = text.split("### `[training]`", 1)[1].split("### ", 1)[0]
    assert "| `eta` |" in training and "**required**" in training
    from solvers.app.spec import _SCHEMA
    order = next(line for line in training.splitlines() if line.startswith("| `order` |"))
    assert f"`{_SCHEMA['training']['order'][1]}`" in order and "one of 1, 2" in order


def test_cli_reference_has_every_subcommand():
    ref = _hooks()
    text = ref.cli_reference()
    from solvers.app.cli.main import build_parser
    for name, _ in ref._subparsers(build_parser()):
        assert f"## `scaling-odes {name}`" in text


def test_site_builds_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    pytest.importorskip("mkdocstrings")
    pytest.importorskip("mkdocs_jupyter")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                          "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    for page in ("index.html", "reference/spec.html", "reference/cli.html",
                 "reference/api.html", "theory/conventions.html", "notebooks/02_figure1.html",
                 "gallery.html", "benchmarks.html"):
        assert (tmp_path / "site" / page).stat().st_size > 0, page
    spec = (tmp_path / "site" / "reference/spec.html").read_text()
    assert spec.count("<table") >= 10                       # one table per section
    api = (tmp_path / "site" / "reference/api.html").read_text()
    assert "solve_spec" in api and "simulate" in api
