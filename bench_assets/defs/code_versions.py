"""Code versions of the assets whose logic changes figures.

Dagster marks an asset stale when its `code_version` differs from the one its last materialization
recorded, and everything downstream with it. A hand-bumped constant is forgotten; so each version is
a digest of the code that computes the asset's figures: the syntax tree of every module listed
below, without docstrings and comments (so a reworded docstring marks nothing stale, a changed
line of scoring does). Nothing to bump by hand: a module whose logic now changes an asset's figures
is added to that asset's list here. A new Python version may print syntax trees differently and so
mark these assets stale once.

The fetch has no code version on purpose: its evidence is archived and never sent again, and a
change to its code changes no figure already fetched (scores are re-derived from the archive).
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # bench_assets/

# What each asset's figures are computed by (directories: every module under them).
SCORING_MODULES = ("score", "metrics", "adapters", "fetch/classify.py", "fetch/spend.py", "golden/rows.py")
AGGREGATE_MODULES = ("aggregate", "metrics", "sentinels/ttr.py")
PUBLISH_MODULES = ("publish", "split/leaks.py")


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
    return tree


def logic_digest(modules: Iterable[str], package: Path = PACKAGE) -> str:
    """A short digest of the logic of `modules` (paths under `package`: a file, or a directory and
    every module under it): their syntax trees without docstrings, in path order."""
    files: set[Path] = set()
    for name in modules:
        path = package / name
        files.update(path.rglob("*.py") if path.is_dir() else [path])
    digest = hashlib.sha256()
    for path in sorted(files):
        tree = _without_docstrings(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(ast.dump(tree, include_attributes=False).encode() + b"\0")
    return digest.hexdigest()[:12]


SCORING_CODE_VERSION = logic_digest(SCORING_MODULES)
AGGREGATE_CODE_VERSION = logic_digest(AGGREGATE_MODULES)
PUBLISH_CODE_VERSION = logic_digest(PUBLISH_MODULES)
