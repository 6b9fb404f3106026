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
from collections.abc import Iterable, Mapping
from pathlib import Path

from bench_assets.runtime import collector_paused

PACKAGE = Path(__file__).resolve().parent.parent  # bench_assets/

# What each asset's figures are computed by (directories: every module under them).
SCORING_MODULES = ("score", "metrics", "adapters", "fetch/classify.py", "fetch/spend.py", "golden/rows.py")
AGGREGATE_MODULES = ("aggregate", "metrics", "sentinels/ttr.py")
PUBLISH_MODULES = ("publish", "split/leaks.py")

STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")  # where a class or function can be


def _drop_docstrings(node: ast.AST) -> None:
    """Remove the docstring of `node` and of every class and function inside it. Only statement
    lists are visited: a definition is a statement, so the expressions (most of a tree) never are."""
    if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            if isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    for field in STATEMENT_LISTS:
        statements = getattr(node, field, None)
        if isinstance(statements, list):
            for statement in statements:
                _drop_docstrings(statement)


def _module_files(modules: Iterable[str], package: Path) -> set[Path]:
    files: set[Path] = set()
    for name in modules:
        path = package / name
        files.update(path.rglob("*.py") if path.is_dir() else [path])
    return files


def logic_digests(groups: Mapping[str, Iterable[str]], package: Path = PACKAGE) -> dict[str, str]:
    """A short digest of the logic of each group of modules (paths under `package`: a file, or a
    directory and every module under it): their syntax trees without docstrings, in path order.
    A module that several groups name is parsed once."""
    files = {name: _module_files(modules, package) for name, modules in groups.items()}
    digests = {name: hashlib.sha256() for name in groups}
    with collector_paused():  # syntax trees form no cycles: the collector's passes over them find nothing
        for path in sorted(set().union(*files.values())):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            _drop_docstrings(tree)
            logic = path.relative_to(package).as_posix().encode() + b"\0" + ast.dump(tree).encode() + b"\0"
            for name, digest in digests.items():
                if path in files[name]:
                    digest.update(logic)
    return {name: digest.hexdigest()[:12] for name, digest in digests.items()}


def logic_digest(modules: Iterable[str], package: Path = PACKAGE) -> str:
    """The digest of one group of modules (`logic_digests`)."""
    return logic_digests({"modules": modules}, package)["modules"]


_VERSIONS = logic_digests({"scoring": SCORING_MODULES, "aggregate": AGGREGATE_MODULES, "publish": PUBLISH_MODULES})
SCORING_CODE_VERSION = _VERSIONS["scoring"]
AGGREGATE_CODE_VERSION = _VERSIONS["aggregate"]
PUBLISH_CODE_VERSION = _VERSIONS["publish"]
