"""The documentation: every code block in README.md and docs/ runs, the generated references
cover the code, and the site builds with warnings as errors.

* ```toml blocks parse; those that are whole specs are validated by the loader of the command
  that reads them (online-SGD spec, [bayes], [kernel], [onestep]).
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
    elif "onestep" in doc:
        from solvers.app.cli import onestep
        onestep._load(path, with_sim="sim" in doc)


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
    # by identity: a schema re-exported under another module's name is documented once
    listed = {id(getattr(importlib.import_module(module), variable))
              for _, module, variable, _, _ in sections}
    for module_name in ("solvers.app.sections", "solvers.app.cli.bayes", "solvers.app.cli.kernel"):
        module = importlib.import_module(module_name)
        for name in dir(module):
            if name.endswith("SCHEMA") and isinstance(getattr(module, name), dict):
                assert id(getattr(module, name)) in listed, f"{module_name}.{name} is not documented"
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
    assert (tmp_path / "site" / "benchmarks-archive.html").stat().st_size > 100_000
    _site_is_offline(tmp_path / "site")
    _formulas_render(tmp_path / "site", tmp_path)


# what a page loads (not what it links to): scripts, style sheets, fonts, preconnects, imports
LOADS = re.compile(r"<script[^>]*\ssrc=\"([^\"]*)\"|<link[^>]*\shref=\"([^\"]*)\"[^>]*>"
                   r"|@import\s+(?:url\()?[\"']?([^\"')\s]+)|url\(\s*[\"']?([^\"')\s]+)")


def _site_is_offline(site: Path) -> None:
    """No page or style sheet of the built site loads anything from another host, and MathJax
    (with its fonts) is in the site."""
    remote = []
    for path in list(site.rglob("*.html")) + list(site.rglob("*.css")):
        for m in LOADS.finditer(path.read_text(errors="replace")):
            target = next(g for g in m.groups() if g is not None)
            tag = m.group(0)
            if m.group(2) is not None and not re.search(
                    r"rel=\"(?:stylesheet|preload|preconnect|modulepreload|icon|manifest)\"", tag):
                continue                                      # a hyperlink, not a resource
            if re.match(r"(?:[a-z]+:)?//", target):
                remote.append(f"{path.relative_to(site)}: {target}")
    assert not remote, "\n".join(sorted(set(remote))[:20])
    mathjax = site / "javascripts" / "mathjax"
    assert (mathjax / "tex-mml-chtml.js").stat().st_size > 500_000
    assert list((mathjax / "output" / "chtml" / "fonts" / "woff-v2").glob("MathJax_Main-*.woff"))


def _formulas_render(site: Path, tmp: Path) -> None:
    """MathJax as shipped, with the site's configuration, typesets the formulas of a theory page
    (arithmatex) and of a notebook (Markdown cells and LaTeX outputs) without an error; the
    count of formulas is checked against the source (node runs MathJax; skipped without it)."""
    import shutil
    node = shutil.which("node")
    if node is None:
        return
    es5 = site / "javascripts" / "mathjax"
    for page, least in (("theory/conventions.html", _count_tex(ROOT / "docs/theory/conventions.md")),
                        ("notebooks/01_hierarchy_and_closure.html",
                         _count_tex(ROOT / "notebooks/01_hierarchy_and_closure.ipynb"))):
        html = (site / page).read_text()
        # what node's DOM cannot parse and MathJax does not read: scripts, styles, images
        html = re.sub(r"<script[\s\S]*?</script>|<style[\s\S]*?</style>|<svg[\s\S]*?</svg>",
                      "", html)
        html = re.sub(r"data:[^\"]*", "", re.sub(r"&[a-zA-Z]+;", " ", html))
        if page.startswith("notebooks/"):       # node's DOM chokes on the notebook's frame
            cells = re.findall(r'<div class="jp-Rendered(?:HTMLCommon jp-RenderedMarkdown|Latex)'
                               r'[\s\S]*?</div>', html)
            html = f"<html><head></head><body>{''.join(cells)}</body></html>"
        lean = tmp / page.replace("/", "_")
        lean.write_text(html)
        run = subprocess.run([node, str(ROOT / "tests" / "mathjax_count.js"), str(es5), str(lean),
                              str(ROOT / "docs" / "javascripts" / "mathjax.js")],
                             capture_output=True, text=True, timeout=300)
        got = __import__("json").loads(run.stdout.strip().splitlines()[-1])
        assert got.get("errors") == 0 and got["found"] >= least > 0, (page, got, least)


def _count_tex(path: Path) -> int:
    """A lower bound on the formulas of a source page: its \\( or $ ... $ and $$ ... $$ spans
    outside code (each one MathJax must find)."""
    text = path.read_text()
    if path.suffix == ".ipynb":
        import json
        cells = json.loads(text)["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    text = re.sub(r"```[\s\S]*?```|`[^`\n]*`", "", text)
    display = len(re.findall(r"\$\$[\s\S]+?\$\$", text))
    text = re.sub(r"\$\$[\s\S]+?\$\$", "", text)
    return display + len(re.findall(r"(?<!\\)\$[^$\n]+?\$", text))


def test_docs_config_loads_nothing_remote():
    """mkdocs.yml and the site's own scripts name no CDN or font service: the math renderer is
    the MathJax the docs extra installs, copied into the site by the build hook."""
    import yaml
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    for entry in config.get("extra_javascript", []) + config.get("extra_css", []):
        assert not re.match(r"(?:[a-z]+:)?//", str(entry)), entry
    assert config["theme"].get("font") is False              # no Google Fonts
    for script in (ROOT / "docs" / "javascripts").glob("*.js"):
        assert "//" not in re.sub(r"^\s*//.*$", "", script.read_text(), flags=re.M), script
    ref = _hooks()
    assert "javascripts/mathjax/tex-mml-chtml.js" in config["extra_javascript"]
    assert config["extra_javascript"][-1].startswith(ref.MATHJAX_DEST + "/")
    pytest.importorskip("mathjax")                            # the docs extra
    shipped = dict(ref.mathjax_files())
    assert "tex-mml-chtml.js" in shipped and any(k.endswith(".woff") for k in shipped)


def _reference_rows(text: str, source: str) -> dict[str, list[str]]:
    """key -> the cells of its row, in the section of the reference whose source is ``source``."""
    section = next(s for s in text.split("\n### ") if f"Source: `{source}`" in s)
    section = section.split("\n#### ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"^\| `([^`]+)` \| (.*) \|$", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in re.split(r"(?<!\\)\|", m.group(2))]
    return rows


def test_every_key_has_its_default_in_the_reference():
    """Every key of every schema (all sections) has a row whose default cell shows the schema's
    default as TOML writes it; a key without one says what stands in for it."""
    from solvers.app.spec import REQUIRED, _fmt
    ref = _hooks()
    text = ref.spec_reference()
    for title, module, variable, subkey, _ in ref.SECTIONS + ref.discovered_schemas():
        schema = getattr(importlib.import_module(module), variable)
        if subkey:
            schema = schema[subkey]
        source = f"{module}.{variable}" + (f'["{subkey}"]' if subkey else "")
        rows = _reference_rows(text, source)
        for key, (_, default, _) in schema.items():
            assert key in rows, f"[{title}] {key} has no row"
            cell = rows[key][1]
            if default is REQUIRED:
                assert "**required**" in cell, f"[{title}] {key}: {cell}"
            elif default is None:
                assert cell, f"[{title}] {key}: empty default"
            else:
                shown = _fmt(list(default) if isinstance(default, tuple) else default)
                assert f"`{shown}`" in cell, f"[{title}] {key}: {cell!r} lacks {shown!r}"


@pytest.mark.parametrize("solve, checked", [({}, ("L", "beta", "N", "digits")),
                                            ({"dps": "float64"}, ("digits",))])
def test_reference_shows_the_defaults_the_loader_fills_in(solve, checked):
    """Independent of the hook: a minimal spec is loaded, and every key the loader fills in
    though its schema default is "not given" must show that value in the reference."""
    import dataclasses
    from solvers.app.spec import _SCHEMA, _fmt, parse_spec
    spec = parse_spec({"training": {"eta": "0.1"}, "solve": {"alpha_max": 10, **solve}})
    text = _hooks().spec_reference()
    filled = []
    for section, schema in _SCHEMA.items():
        rows = _reference_rows(text, f'solvers.app.spec._SCHEMA["{section}"]')
        values = dataclasses.asdict(getattr(spec, section))
        for key, (_, default, _) in schema.items():
            given = key in ("eta", "alpha_max") or key in solve
            if default is not None or given or values.get(key) is None:
                continue
            filled.append(key)
            if key == "alpha_min":                 # depends on alpha_max and spacing: named
                assert "`alpha_max`" in rows[key][1] and "`spacing`" in rows[key][1]
                continue
            assert f"`{_fmt(values[key])}`" in rows[key][1], (section, key, rows[key][1])
    assert set(checked) <= set(filled)            # the test saw the keys it is about


def test_schedule_tables_in_the_reference_are_what_the_loader_takes():
    """The reference lists each schedule kind with its keys; a spec with exactly those keys
    loads, one without any of them or with a foreign key is refused."""
    from solvers.app.spec import SpecError, parse_spec
    text = _hooks().spec_reference()
    block = text.split("#### `[training] schedule` tables", 1)[1].split("\n### ", 1)[0]
    kinds = {m.group(1): re.findall(r"`(\w+)`", m.group(2))
             for m in re.finditer(r'^\| `"(\w+)"` \| ([^|]*) \|', block, re.M)}
    assert set(kinds) == {"constant", "power", "steps"}

    def load(schedule):
        return parse_spec({"training": {"eta": "0.1", "schedule": schedule},
                           "solve": {"alpha_max": 10}})
    value = {"alphas": [1, 2], "etas": ["0.05", "0.02"], "alpha0": 1, "p": "0.5"}
    for kind, keys in kinds.items():
        load({"kind": kind, **{k: value[k] for k in keys}})
        for k in keys:
            with pytest.raises(SpecError):
                load({"kind": kind, **{j: value[j] for j in keys if j != k}})
        foreign = next(k for k in value if k not in keys)
        with pytest.raises(SpecError):
            load({"kind": kind, **{k: value[k] for k in keys}, foreign: value[foreign]})


def test_help_names_no_source_folder():
    """`--help` of every subcommand speaks to users: no package folder or module of the source."""
    text = _hooks().cli_reference()
    found = re.findall(r"\b(?:solvers|derive)(?:/[\w/]*|\.\w+)|\b\w+\.py\b", text)
    assert not found, found
