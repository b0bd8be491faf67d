"""MkDocs hook: the spec and CLI references, generated from the code at build time.

A page asks for a generated block with a marker line:

    <!-- generated: spec-reference -->      every spec section: key, type, default, allowed values
    <!-- generated: cli-reference -->       ``--help`` of every subcommand (argparse)

The spec tables walk the schemas themselves (``solvers.app.spec`` and the section schemas of
the subcommands: key -> (converter, default, check)); the "meaning" column is the comment written
next to the key in the source.  Nothing here is a copy that could drift from the code.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import io
import os
import re
import tokenize
from fractions import Fraction

try:
    from mkdocs.plugins import event_priority
except ImportError:            # imported by the tests without MkDocs
    def event_priority(priority):
        return lambda f: f

# (title, module, variable, sub-key, commands that read it)
SECTIONS = [
    ("model", "solvers.app.spec", "_SCHEMA", "model", "every online-SGD command"),
    ("data", "solvers.app.spec", "_SCHEMA", "data", "every online-SGD command"),
    ("training", "solvers.app.spec", "_SCHEMA", "training", "every online-SGD command"),
    ("solve", "solvers.app.spec", "_SCHEMA", "solve", "every online-SGD command"),
    ("linear", "solvers.app.sections", "LINEAR_SCHEMA", None,
     "`linear curve`, `linear window`, `linear feature-scaling`"),
    ("simulate", "solvers.app.spec", "SIMULATE_SCHEMA", None,
     "`simulate`, `compare`, `sweep`"),
    ("plateau", "solvers.app.sections", "PLATEAU_SCHEMA", None, "`plateau`"),
    ("asymptotic", "solvers.app.sections", "ASYMPTOTIC_SCHEMA", None, "`asymptotic`"),
    ("sweep", "solvers.app.sections", "SWEEP_SCHEMA", None, "`sweep`"),
    ("bayes", "solvers.app.cli.bayes", "SCHEMA", None,
     "`bayes`, `bayes transitions`, `bayes limit`"),
    ("kernel", "solvers.app.cli.kernel", "KERNEL_SCHEMA", None, "`kernel`, `kernel-mc`"),
    ("mc", "solvers.app.cli.kernel", "MC_SCHEMA", None, "`kernel-mc`"),
    ("data", "solvers.app.cli.kernel", "DATA_SCHEMA", None,
     "`kernel`, `kernel-mc` (the toolkit's L-level spectrum instead of `a` / `eigenvalues`)"),
    ("onestep", "solvers.app.cli.onestep", "ONESTEP_SCHEMA", None, "`onestep`, `onestep-sim`"),
    ("sim", "solvers.app.cli.onestep", "SIM_SCHEMA", None, "`onestep-sim`"),
    ("plrf", "solvers.app.cli.plrf", "PLRF_SCHEMA", None,
     "`plrf curve`, `plrf frontier`, `plrf simulate`"),
]


# ---- describing converters, defaults and checks -------------------------------------------

def _nonlocals(fn) -> dict:
    try:
        return inspect.getclosurevars(fn).nonlocals
    except (TypeError, ValueError):
        return {}


def describe_type(conv) -> str:
    """The TOML type a converter accepts, in words."""
    from solvers.app import spec as S
    names = {S._int: "integer", S._bool: "boolean", S._str: "string", S._float: "number",
             S._exact: "number or decimal string (exact)",
             S._dps: 'integer, "auto" or "float64"'}
    if getattr(S, "_init_value", None) is conv:
        return 'string or table {from = "run.json"}'
    if getattr(S, "_schedule", None) is conv:
        kinds = " | ".join(f'"{kind}"' for kind in S._SCHEDULE_KEYS)
        return f"table {{kind = {kinds}, ...}} (below)"
    if conv in names:
        return names[conv]
    if hasattr(conv, "toml_type"):          # a converter that states its own TOML type
        return conv.toml_type
    nl = _nonlocals(conv)
    if "expected" in nl and "conv" in nl:
        return str(nl["expected"])
    if getattr(conv, "__name__", "") == "<lambda>":
        return "table"
    raise ValueError(f"no description for converter {conv!r}: teach docs/hooks/reference.py")


def describe_check(chk) -> str:
    """The allowed values a check enforces, in words ('' when anything goes)."""
    if chk is None:
        return ""
    name = getattr(chk, "__name__", "")
    if name == "_distinct":
        return "pairwise distinct"
    if name == "_increasing":
        return "strictly increasing"
    if name == "_dps_ok":
        return '>= 15, "auto" or "float64"'
    if name == "_activation_ok":
        return '"erf", "linear", "relu" or a polynomial in x such as "x**3 - 3*x"'
    nl = _nonlocals(chk)
    if "checks" in nl:
        return "; ".join(filter(None, (describe_check(c) for c in nl["checks"])))
    if "check" in nl and name == "check_all":
        return "each " + describe_check(nl["check"])
    if "text" in nl:
        return re.sub(r"^must be ", "", str(nl["text"]))
    raise ValueError(f"no description for check {chk!r}: teach docs/hooks/reference.py")


def conditional_defaults() -> dict:
    """(module, variable, sub-key, key) -> the default the spec's checks fill in for a key whose
    schema default is None because it depends on other keys; built from the constants those
    checks use, so nothing here restates a number."""
    from solvers.app import spec as S
    f = S._fmt
    main = ("solvers.app.spec", "_SCHEMA")
    return {
        (*main, "data", "L"): f"`{f(S.DEFAULT_L)}`; the number of `eigenvalues` when given",
        (*main, "data", "beta"): f"`{f(S.DEFAULT_BETA)}` unless `eigenvalues` is given",
        (*main, "data", "N"): f'`{f(S.DEFAULT_N)}` when the start needs a realisation '
                              f'(`init = "random"` or `"informed"`)',
        (*main, "solve", "digits"): f'`{f(S.DEFAULT_DIGITS)}`; `{f(S.FLOAT64_DEFAULT_DIGITS)}` '
                                    f'with `dps = "float64"`',
        (*main, "solve", "alpha_min"): "from `alpha_max` and `spacing` (note)",
        (*main, "solve", "alpha_max"): "**required** unless `alphas` is given",
        ("solvers.app.cli.kernel", "DATA_SCHEMA", None, "N"): "**required**",
        ("solvers.app.cli.kernel", "DATA_SCHEMA", None, "L"): "**required** unless `eigenvalues`",
        ("solvers.app.cli.kernel", "DATA_SCHEMA", None, "beta"): "**required** unless `eigenvalues`",
        (*main, "model", "student_activation"): "`activation`",
        (*main, "model", "teacher_activation"): "`activation`",
    }


def describe_default(value, where: tuple | None = None) -> str:
    from solvers.app.spec import REQUIRED, _fmt
    if value is REQUIRED:
        return "**required**"
    if value is None:
        return conditional_defaults().get(where, "not given")
    if isinstance(value, Fraction):
        return f"`{_fmt(value)}`"
    if isinstance(value, tuple):
        value = list(value)
    return f"`{_fmt(value)}`"


# ---- the comments next to the keys in the source --------------------------------------------

def _dict_node(tree, variable, subkey):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == variable for t in targets):
                d = node.value
                if subkey is None:
                    return d
                for k, v in zip(d.keys, d.values):
                    if isinstance(k, ast.Constant) and k.value == subkey:
                        return v
    raise ValueError(f"schema {variable}[{subkey}] not found")


def key_comments(module_name: str, variable: str, subkey: str | None) -> dict:
    """key -> the comments written next to (or on the lines just before) that key's entry."""
    module = importlib.import_module(module_name)
    source = inspect.getsource(module)
    node = _dict_node(ast.parse(source), variable, subkey)
    lines = source.splitlines()
    keys = [(k.value, k.lineno) for k in node.keys if isinstance(k, ast.Constant)]
    starts = [line for _, line in keys]
    out = {key: [] for key, _ in keys}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        ln = tok.start[0]
        if tok.type != tokenize.COMMENT or not node.lineno <= ln <= node.end_lineno:
            continue
        text = tok.string.lstrip("#").strip()
        alone = not lines[ln - 1][:tok.start[1]].strip()
        # a comment on a line of its own introduces the next key; a trailing one belongs to
        # the key whose entry the line is part of
        if alone:
            after = [i for i, s in enumerate(starts) if s > ln]
            if after:
                out[keys[after[0]][0]].append(text)
        else:
            before = [i for i, s in enumerate(starts) if s <= ln]
            if before:
                out[keys[before[-1]][0]].append(text)
    return {key: " ".join(parts) for key, parts in out.items()}


# ---- the generated blocks ------------------------------------------------------------------

def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def schema_table(module_name, variable, subkey) -> str:
    module = importlib.import_module(module_name)
    schema = getattr(module, variable)
    if subkey is not None:
        schema = schema[subkey]
    notes = key_comments(module_name, variable, subkey)
    rows = ["| key | type | default | allowed | note |", "|---|---|---|---|---|"]
    for key, (conv, default, chk) in schema.items():
        where = (module_name, variable, subkey, key)
        rows.append(f"| `{key}` | {_cell(describe_type(conv))} | "
                    f"{_cell(describe_default(default, where))} | "
                    f"{_cell(describe_check(chk))} | {_cell(notes.get(key, ''))} |")
    return "\n".join(rows)


# tables inside a key: (section title, key, module, variable of kind -> sub-keys)
SUBTABLES = [("training", "schedule", "solvers.app.spec", "_SCHEDULE_KEYS")]


def subtable(title, key, module_name, variable) -> str:
    kinds = getattr(importlib.import_module(module_name), variable)
    notes = key_comments(module_name, variable, None)
    rows = [f"#### `[{title}] {key}` tables\n", "| `kind` | keys | meaning |", "|---|---|---|"]
    for kind, keys in kinds.items():
        listed = ", ".join(f"`{k}`" for k in keys) or "—"
        rows.append(f'| `"{kind}"` | {listed} | {_cell(notes.get(kind, ""))} |')
    return "\n".join(rows)


SCHEMA_PACKAGES = ("solvers.app", "solvers.app.cli")


def discovered_schemas() -> list[tuple]:
    """Section schemas in the app modules that SECTIONS does not list yet (a new subcommand's
    section is documented from the day it exists; SECTIONS only adds its name and readers)."""
    import pkgutil
    listed = {id(getattr(importlib.import_module(m), v)) for _, m, v, _, _ in SECTIONS}
    found = []
    for package_name in SCHEMA_PACKAGES:
        package = importlib.import_module(package_name)
        for info in pkgutil.iter_modules(package.__path__):
            if info.ispkg:
                continue
            name = f"{package_name}.{info.name}"
            module = importlib.import_module(name)
            for variable, value in vars(module).items():
                if (variable.endswith("SCHEMA") and isinstance(value, dict) and value
                        and all(isinstance(v, tuple) and len(v) == 3 for v in value.values())
                        and id(value) not in listed):        # re-exports count once
                    listed.add(id(value))
                    title = variable[:-len("SCHEMA")].strip("_").lower() or info.name
                    found.append((title, name, variable, None, f"`{info.name}` (see its `--help`)"))
    return found


def spec_reference() -> str:
    parts = []
    for title, module, variable, subkey, used_by in SECTIONS + discovered_schemas():
        source = f"{module}.{variable}" + (f'["{subkey}"]' if subkey else "")
        parts.append(f"### `[{title}]`\n\nRead by {used_by}. Source: `{source}`.\n\n"
                     f"{schema_table(module, variable, subkey)}\n")
        for sub_title, key, sub_module, sub_variable in SUBTABLES:
            if (module, subkey) == ("solvers.app.spec", sub_title):
                parts.append(subtable(sub_title, key, sub_module, sub_variable) + "\n")
    return "\n".join(parts)


def _subparsers(parser):
    import argparse
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def cli_reference() -> str:
    from solvers.app.cli.main import build_parser
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"          # the same line breaks on every machine
    try:
        root = build_parser()
        parts = [f"## `scaling-odes`\n\n```text\n{root.format_help().rstrip()}\n```\n"]

        def walk(parser, prefix):
            for name, sub in _subparsers(parser):
                parts.append(f"## `{prefix} {name}`\n\n```text\n{sub.format_help().rstrip()}\n```\n")
                walk(sub, f"{prefix} {name}")
        walk(root, "scaling-odes")
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(parts)


GENERATORS = {"spec-reference": spec_reference, "cli-reference": cli_reference}
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)


def expand(markdown: str) -> str:
    """Replace every marker line by its generated block."""
    def sub(m):
        name = m.group(1)
        if name not in GENERATORS:
            raise ValueError(f"unknown generated block {name!r}")
        return GENERATORS[name]()
    return MARKER.sub(sub, markdown)


def on_page_markdown(markdown, page, config, files):     # MkDocs hook
    return expand(markdown)


# ---- pages that live outside docs/: the notebooks and the benchmark record ----------------------

ROOT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _read(rel: str) -> str:
    with open(os.path.join(ROOT_DIR, rel), encoding="utf-8") as fh:
        return fh.read()


BENCHMARKS_HEAD = """# Benchmarks

The repository's `BENCHMARKS.md` as it stands: the headline figures, each with the command that
reproduces it and the CPU it was measured on, and which script in `bench/` measures what.
Highlights are also summarised under [Performance](guide/performance.md); every section of the
dated record is on the page [Benchmark record](benchmarks-archive.md).

"""

ARCHIVE_HEAD = """# Benchmark record

The repository's `bench/ARCHIVE.md`: every measured section as it was written.

"""

# links between the two files, as written in the repository -> as pages of the site
_BENCH_LINKS = {"](bench/ARCHIVE.md)": "](benchmarks-archive.md)",
                "](../BENCHMARKS.md)": "](benchmarks.md)"}


def _site_links(text: str) -> str:
    for repo_link, page_link in _BENCH_LINKS.items():
        text = text.replace(repo_link, page_link)
    return text


def _without_title(text: str) -> str:
    return text.split("\n", 1)[1] if text.startswith("# ") else text   # its own title goes


def benchmarks_page() -> str:
    return BENCHMARKS_HEAD + _site_links(_without_title(_read("BENCHMARKS.md")))


def benchmarks_archive_page() -> str:
    return ARCHIVE_HEAD + _site_links(_without_title(_read("bench/ARCHIVE.md")))


# ---- the math renderer, installed by the docs build (no CDN: formulas render offline) ---------

MATHJAX_DEST = "javascripts/mathjax"        # mkdocs.yml loads MATHJAX_DEST/tex-mml-chtml.js
# the one combined component the site loads, the folders it loads parts from on demand, and
# the loader and core the tests use to run those parts in node (tests/mathjax_count.js)
MATHJAX_PARTS = ("tex-mml-chtml.js", "input", "output", "ui", "a11y", "adaptors", "sre",
                 "startup.js", "core.js")


def mathjax_dir():
    """MathJax 3's es5 build as the docs extra installs it (the django-static-mathjax wheel:
    MathJax's files only, no Django)."""
    from importlib.resources import files
    try:
        root = files("mathjax") / "static" / "mathjax" / "es5"
    except ModuleNotFoundError:
        root = None
    if root is None or not (root / "tex-mml-chtml.js").is_file():
        raise RuntimeError("MathJax is not installed: pip install -e '.[docs]' "
                           "(django-static-mathjax)")
    return str(root)


def mathjax_files():
    """(path under MATHJAX_DEST, absolute source path) of every file the site ships."""
    root = mathjax_dir()
    for part in MATHJAX_PARTS:
        src = os.path.join(root, part)
        if os.path.isfile(src):
            yield part, src
            continue
        for folder, _, names in os.walk(src):
            for name in sorted(names):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, root).replace(os.sep, "/"), path


@event_priority(100)       # before mkdocs-jupyter wraps the notebook files
def on_files(files, config):
    from mkdocs.structure.files import File
    for rel, src in mathjax_files():
        files.append(File.generated(config, f"{MATHJAX_DEST}/{rel}", abs_src_path=src))
    nb_dir = os.path.join(ROOT_DIR, "notebooks")
    for name in sorted(os.listdir(nb_dir)):
        if name.endswith(".ipynb"):
            files.append(File(f"notebooks/{name}", ROOT_DIR, config["site_dir"],
                              config["use_directory_urls"]))
    files.append(File.generated(config, "notebooks/index.md", content=_read("notebooks/README.md")))
    files.append(File.generated(config, "benchmarks.md", content=benchmarks_page()))
    files.append(File.generated(config, "benchmarks-archive.md",
                                content=benchmarks_archive_page()))
    return files
