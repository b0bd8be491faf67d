"""docs/guide/architecture.md against the tree: its folder table names every package and every
top-level folder, names nothing that does not exist, and every module a row names is in that
row's folder.

The reference is the file system (packages are folders with ``__init__.py`` under solvers/ and
derive/; top-level folders are those git tracks files in), not the page.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.contract]

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "guide" / "architecture.md"
ROW = re.compile(r"^\| `([^`]+/)` \| (.*) \|$", re.M)
MODULE = re.compile(r"`([\w./*-]+\.(?:py|c))`")


def table_rows(page: Path = PAGE) -> dict[str, str]:
    text = page.read_text()
    section = text.split("## What lives where", 1)[1].split("\n## ", 1)[0]
    rows = dict(ROW.findall(section))
    assert rows, "no folder table under 'What lives where'"
    return rows


def packages() -> set[str]:
    return {p.parent.relative_to(ROOT).as_posix() + "/"
            for top in ("solvers", "derive") for p in (ROOT / top).rglob("__init__.py")
            if "__pycache__" not in p.parts}


def top_level_folders() -> set[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode()
        names = {f.split("/", 1)[0] for f in out.split("\0") if "/" in f}
    except (OSError, subprocess.CalledProcessError):      # not a git checkout
        skip = {".git", ".venv", ".cache", "site", "demo-output", ".pytest_cache"}
        names = {p.name for p in ROOT.iterdir() if p.is_dir() and p.name not in skip}
    return {n + "/" for n in names}


def test_every_package_and_top_level_folder_has_a_row():
    rows = table_rows()
    missing = sorted((packages() | top_level_folders()) - set(rows))
    assert not missing, f"folders without a row in {PAGE.name}: {missing}"


def test_every_row_is_an_existing_folder():
    absent = [folder for folder in table_rows() if not (ROOT / folder).is_dir()]
    assert not absent, f"{PAGE.name} names folders that do not exist: {absent}"


def test_modules_named_in_a_row_are_in_its_folder():
    """`numbers.py` in the solvers/core/ row is solvers/core/numbers.py; a name with a folder
    (`derive/codegen/jet_printer.py`, `tests/conftest.py`) is taken from the repository root."""
    wrong = []
    for folder, text in table_rows().items():
        for name in MODULE.findall(text):
            if "*" in name:
                continue
            where = ROOT / name if "/" in name else ROOT / folder / name
            if not where.exists():
                wrong.append(f"{folder}: {name}")
    assert not wrong, f"{PAGE.name} names modules that are not where it says: {wrong}"


def test_the_checks_catch_a_wrong_table(tmp_path):
    """The checks can fail: a table with a made-up folder and without a real package is caught."""
    rows = table_rows()
    fake = "\n".join(f"| `{f}` | {t} |" for f, t in rows.items() if f != "solvers/sim/")
    page = tmp_path / "architecture.md"
    page.write_text(f"## What lives where\n\n| folder | holds |\n| --- | --- |\n{fake}\n"
                    f"| `solvers/nowhere/` | nothing |\n")
    wrong = table_rows(page)
    assert "solvers/sim/" in (packages() | top_level_folders()) - set(wrong)
    assert "solvers/nowhere/" in wrong and not (ROOT / "solvers/nowhere/").is_dir()
