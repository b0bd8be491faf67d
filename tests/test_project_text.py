"""Project text hygiene: every tracked text file speaks for the project itself.

No file (code, comments, docs, notebooks and their stored outputs, examples, tests) points into
material that a clone does not have (the developers' design notes and paper notes, "the notes",
"the issue", issue-tracker numbers) or names a path outside the repository (a home, work or
temporary folder of some machine, this machine's own paths included); the project's own docs
(docs/theory/, docs/guide/) carry what those pointed to.  Paths named in the user-facing Markdown
must exist in the clone.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.contract]

ROOT = Path(__file__).resolve().parent.parent
THIS = Path(__file__).resolve()

# assembled from pieces so that this file does not match itself
FORBIDDEN = [
    ("the developers' shared folder", re.compile(re.escape("../" + "shared") + r"|/work/" + "shared")),
    ("the paper notes", re.compile("shared/" + "papers|papers/[\\w.-]*-" + "notes\\.md")),
    ("the design notes", re.compile("DESIGN" + r"\.md|DESIGN" + r"\s*§")),
    ("an issue number", re.compile(r"\bissues?[\s-]*#?\s*\d+", re.I)),
    ("an issue number", re.compile(r"(?<![\w&/=#'\"])#\d+\b")),
    ("notes a clone does not have",
     re.compile(r"\b(?:the|our|project|paper|design)\s+" + "notes\\b|\\bnotes\\s*§|-" + r"notes\.md",
                re.I)),
    ("the issue tracker", re.compile(r"\bthe\s+" + r"issue\b|\bissue's\b|\bperformance\s+" + r"issue\b",
                                     re.I)),
    ("a path outside the repository",
     re.compile(r"(?<![\w.~$/-])/(?:home|work|tmp|root|Users|mnt|srv|scratch|opt|var)/[\w.-]")),
]
TEXT_SUFFIXES = {".py", ".md", ".toml", ".ipynb", ".txt", ".cfg", ".ini", ".yml", ".yaml",
                 ".c", ".h", ".sh", ".json", ""}


def tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode()
        files = [ROOT / f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):      # not a git checkout: walk the tree
        skip = {".git", ".venv", ".cache", "site", "demo-output", "__pycache__"}
        files = [p for p in ROOT.rglob("*") if p.is_file()
                 and not skip.intersection(p.relative_to(ROOT).parts)]
    return [f for f in files if f.suffix in TEXT_SUFFIXES and f.is_file() and f != THIS]


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data[:4096]:
        return None
    text = data.decode("utf-8", errors="replace")
    if path.suffix == ".ipynb":
        # images are base64 (no '#'), but a long digit-free blob is not text: drop them
        text = re.sub(r'"image/[a-z+]+": "[^"]*"', '""', text)
    return text


def forbidden_hits(text: str) -> list[tuple[int, str, str]]:
    hits = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for what, pattern in FORBIDDEN:
            m = pattern.search(line)
            if m:
                hits.append((lineno, what, m.group(0)))
    return hits


def tracked_texts():
    """(path, text) of every tracked text file (binary files left out)."""
    for path in tracked_files():
        text = _text(path)
        if text is not None:
            yield path, text


def test_no_references_to_notes_or_issues():
    hits = []
    for path, text in tracked_texts():
        hits += [f"{path.relative_to(ROOT)}:{lineno}: {what}: {match!r}"
                 for lineno, what, match in forbidden_hits(text)]
    assert not hits, "\n".join(hits[:40])


def test_forbidden_patterns_catch_what_they_name():
    """Each rule fires on a sentence that breaks it and not on its harmless neighbours (the
    examples are assembled here so that this file does not match itself)."""
    bad = {"notes a clone does not have": ["as " + "the notes say", "see notes " + "§5",
                                           "kernel-curves-" + "notes.md"],
           "the issue tracker": ["the " + "issue asks for 5 %", "the " + "issue's table",
                                 "the performance " + "issue"],
           "a path outside the repository": ["cached in /" + "work/wt/.cache/ab",
                                             "--out /" + "tmp/x.json", "/" + "home/me/x"]}
    for what, lines in bad.items():
        for line in lines:
            assert what in {w for _, w, _ in forbidden_hits(line)}, line
    for fine in ("the theory notes (docs/theory/)", "meta.notes", "/usr/bin/time -v",
                 "cached in ~/.cache/scaling-odes/ab", "bench/specs/x.toml", "an issue-free run"):
        assert not forbidden_hits(fine), fine


def this_machines_paths() -> list[str]:
    """The absolute paths that only this machine has: the checkout, the home and temp folders."""
    import tempfile
    out = {str(ROOT), str(Path.home()), tempfile.gettempdir()}
    return sorted(p.rstrip("/") + "/" for p in out if len(p) > 1)      # a folder, not a prefix


def test_no_path_of_this_machine():
    """Notebook outputs, logs pasted into docs: nothing names where this checkout lives."""
    hits = [f"{path.relative_to(ROOT)}: {p}" for path, text in tracked_texts()
            for p in this_machines_paths() if p in text]
    assert not hits, "\n".join(hits[:40])


USER_DOCS = ["README.md", "BENCHMARKS.md", "notebooks/README.md", "docs/**/*.md", "examples/*.toml"]
PATH_RE = re.compile(r"(?<![\w/.~$-])((?:derive|solvers|tests|bench|docs|notebooks|examples)"
                     r"/[\w./-]*[\w/])")
# pages the docs build makes (docs/hooks/reference.py: BENCHMARKS.md, bench/ARCHIVE.md and
# notebooks/ as pages)
GENERATED_PAGES = {(ROOT / "docs" / name).resolve()
                   for name in ("benchmarks.md", "benchmarks-archive.md")}
LINK_RE = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def user_docs() -> list[Path]:
    out = []
    for pattern in USER_DOCS:
        out += sorted(ROOT.glob(pattern))
    return [p for p in out if p.is_file()]


def _exists(rel: str, base: Path) -> bool:
    rel = rel.rstrip("/.")
    if any(ch in rel for ch in "*<>{}"):
        return True                                   # a pattern, not a path
    for where in (ROOT, base):
        target = where / rel
        # a module or notebook may be named without its suffix (derive/spectra)
        if target.exists() or any(target.parent.glob(target.name + ".*")):
            return True
    return False


def test_user_docs_name_existing_files():
    missing = []
    for path in user_docs():
        text = path.read_text()
        for m in PATH_RE.finditer(text):
            rel = m.group(1)
            if text[m.end():m.end() + 1] in ("<", "*", "{"):
                continue                              # a pattern (test_notebook_<name>.py)
            if "docs/figures/cache" in rel or rel.endswith(".sweep") or "sweep-results" in rel \
                    or rel.startswith("bench/results"):
                continue                              # made by a run, not in a clone
            if not _exists(rel, path.parent):
                missing.append(f"{path.relative_to(ROOT)}: {rel}")
        if path.suffix == ".md":
            for m in LINK_RE.finditer(text):
                target = m.group(1)
                if re.match(r"[a-z]+:", target):      # http:, mailto:
                    continue
                resolved = (path.parent / target).resolve()
                if resolved in GENERATED_PAGES:
                    continue
                if not resolved.exists():
                    missing.append(f"{path.relative_to(ROOT)}: link {target}")
    assert not missing, "\n".join(missing)


DOC_PATH_RE = re.compile(r"(?<![\w/.~$-])((?:docs|examples)/[\w./-]*[\w/])")


def test_code_names_existing_docs():
    """Comments and docstrings that send the reader to docs/ or examples/ name real files."""
    missing = []
    for path in tracked_files():
        if path.suffix not in (".py", ".toml", ".c", ".ipynb"):
            continue
        text = _text(path) or ""
        for m in DOC_PATH_RE.finditer(text):
            rel = m.group(1)
            if text[m.end():m.end() + 1] in ("<", "*", "{") or "figures/cache" in rel \
                    or "sweep-results" in rel:
                continue
            if not _exists(rel, path.parent):
                missing.append(f"{path.relative_to(ROOT)}: {rel}")
    assert not missing, "\n".join(sorted(set(missing)))
