"""Comparing published figures and files with re-derived ones: JSON figure by figure, CSV cell by
cell, DuckDB frames row by row, every other file byte for byte (naming, for HTML and SVG, the first
text that differs and where). `bench rescore` and `bench reproduce` report through these."""

from __future__ import annotations

import csv
import hashlib
import io
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from selectolax.lexbor import LexborHTMLParser

from bench_assets.storage.values import plain

TOLERANCE = 1e-9
ROW_SCORES = "row_scores (DuckDB)"
VENDOR_METRICS = "vendor_metrics (DuckDB)"
VENDOR_COMPARISONS = "vendor_comparisons (DuckDB)"
# Published files compared figure by figure (the rest of the site is compared as files).
FIGURE_FILES = ("leaderboard.json", "leaderboard.csv", "pairwise.csv", "public_row_scores.csv")
EXCERPT = 120  # characters of a differing line shown each side


@dataclass(frozen=True)
class Difference:
    """One figure that differs: where (`surface`: a published file or a warehouse table), whose
    (`vendor`, None for a snapshot-wide field), which (`item`: the metric, column or row), and the
    published (or stored) and re-derived values (None: absent on that side)."""

    surface: str
    vendor: str | None
    item: str
    published: Any
    derived: Any

    def __str__(self) -> str:
        side = "stored" if self.surface.endswith("(DuckDB)") else "published"
        return (
            f"{self.surface} · vendor {self.vendor or '—'} · {self.item}: "
            f"{side} {self.published!r}, derived {self.derived!r}"
        )


@dataclass
class RescoreReport:
    snapshot_id: str
    rows_rescored: int = 0
    vendors: list[str] = field(default_factory=list)
    surfaces: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        head = (
            f"rescored {self.snapshot_id}: {self.rows_rescored} row scores for {len(self.vendors)} vendors "
            f"from archived responses (no vendor called); compared {', '.join(self.surfaces) or 'nothing'}"
        )
        head += "".join(f"\nnote: {n}" for n in self.notes)
        head += "".join(f"\nwarning: {w}" for w in self.warnings)
        if not self.differences:
            return head + "\nno differences"
        return head + f"\n{len(self.differences)} differences:\n" + "\n".join(f"  {d}" for d in self.differences)


# ##### COMPARING


def _number(x: Any, text: bool) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)):
        return float(x)
    if text and isinstance(x, str) and x.strip():
        try:
            return float(x)
        except ValueError:
            return None
    return None


def same_value(published: Any, derived: Any, tol: float = TOLERANCE, *, text: bool = False) -> bool:
    """Equal as figures: numbers within `tol` (with `text`, numeric CSV cells too), anything else exactly."""
    published, derived = plain(published), plain(derived)
    if isinstance(published, bool) or isinstance(derived, bool):
        return isinstance(published, bool) and isinstance(derived, bool) and published == derived
    a, b = _number(published, text), _number(derived, text)
    if a is not None and b is not None:
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    return published == derived


def _keyed(items: list[Any]) -> tuple[str, dict[Any, Any]] | None:
    """A list of records matched by their `vendor` or `row_id` field, when it identifies each one."""
    for key in ("vendor", "row_id"):
        if items and all(isinstance(x, dict) and key in x for x in items):
            keys = [x[key] for x in items]
            if len(set(keys)) == len(keys):
                return key, dict(zip(keys, items))
    return None


def compare_json(path: str, published: Any, derived: Any) -> Iterator[tuple[str, Any, Any]]:
    """Every leaf that differs between two JSON documents, as (path, published, derived). Lists of
    records are matched by `vendor` or `row_id`, so one missing record does not shift the rest."""
    if isinstance(published, dict) and isinstance(derived, dict):
        for key in sorted(set(published) | set(derived), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in derived:
                yield sub, published[key], None
            elif key not in published:
                yield sub, None, derived[key]
            else:
                yield from compare_json(sub, published[key], derived[key])
    elif isinstance(published, list) and isinstance(derived, list):
        left, right = _keyed(published), _keyed(derived)
        if left and right and left[0] == right[0]:
            a, b = left[1], right[1]
            for k in list(a) + [k for k in b if k not in a]:
                sub = f"{path}[{k}]"
                if k not in b:
                    yield sub, a[k], None
                elif k not in a:
                    yield sub, None, b[k]
                else:
                    yield from compare_json(sub, a[k], b[k])
            return
        if len(published) != len(derived):
            yield f"{path} (items)", len(published), len(derived)
        for i, (a, b) in enumerate(zip(published, derived)):
            yield from compare_json(f"{path}[{i}]", a, b)
    elif not same_value(published, derived):
        yield path, published, derived


def vendor_in(path: str) -> tuple[str | None, str]:
    """`vendors[exa].metrics.x` → ("exa", "metrics.x")."""
    prefix = "vendors["
    if path.startswith(prefix) and "]" in path:
        vendor, _, rest = path[len(prefix) :].partition("]")
        return vendor, rest.lstrip(".") or "(entry)"
    return None, path


def compare_csv(
    surface: str, published: str, derived: str, key: tuple[str, ...], vendor_column: str = "vendor"
) -> list[Difference]:
    """Cell by cell, rows matched on `key`: every cell that differs, every row on one side only."""

    def rows(text: str) -> tuple[list[str], dict[tuple[str, ...], dict[str, str]]]:
        reader = csv.DictReader(io.StringIO(text))
        return list(reader.fieldnames or []), {tuple(r.get(k, "") for k in key): r for r in reader}

    if published == derived:  # the same text: the same columns, rows and cells
        return []
    pub_cols, pub = rows(published)
    der_cols, der = rows(derived)
    out: list[Difference] = []
    for column in [c for c in der_cols if c not in pub_cols]:
        out.append(Difference(surface, None, f"column {column}", None, "present"))
    for column in [c for c in pub_cols if c not in der_cols]:
        out.append(Difference(surface, None, f"column {column}", "present", None))
    columns = [c for c in der_cols if c in pub_cols and c not in key]
    for k in list(pub) + [k for k in der if k not in pub]:
        record = dict(zip(key, k))
        vendor = record.get(vendor_column)
        where = ", ".join(f"{c} {v}" for c, v in record.items() if c != vendor_column)
        a, b = pub.get(k), der.get(k)
        if a is None or b is None:
            out.append(
                Difference(surface, vendor, where or "row", None if a is None else "row", None if b is None else "row")
            )
            continue
        for column in columns:
            if not same_value(a[column] or None, b[column] or None, text=True):
                item = f"{where}: {column}" if where else column
                out.append(Difference(surface, vendor, item, a[column], b[column]))
    return out


def _rows_by_key(df: pd.DataFrame, key: list[str]) -> dict[tuple[Any, ...], int]:
    """Each key's row (the last of equal keys), in the order the keys first appear."""
    columns = [df[k].tolist() for k in key] if len(df) else []
    if columns and all(set(map(type, c)) == {str} for c in columns):  # plain already (`plain` keeps a str)
        return {k: i for i, k in enumerate(zip(*columns))}
    keys = zip(*columns) if columns else iter(())
    return {tuple(plain(x) for x in k): i for i, k in enumerate(keys)}


def _column(df: pd.DataFrame, column: str) -> list[Any]:
    return df[column].tolist() if column in df.columns else [None] * len(df)


_PLAIN_TYPES = (str, int, float, bool)


def _same_cell(a: Any, b: Any) -> bool:
    """`same_value`, answered at once for two plain values of one type that are equal."""
    kind = type(a)
    if kind is type(b) and kind in _PLAIN_TYPES and a == b:
        return True
    return same_value(a, b)


def compare_frames(
    surface: str, stored: pd.DataFrame, derived: pd.DataFrame, key: list[str], columns: list[str]
) -> list[Difference]:
    """A warehouse table against its re-derivation, row by row on `key`, column by column (read a
    column at a time: a large table is not turned into as many dicts). Rows whose cells
    are all the same value of the same type on both sides (`_rows_that_may_differ`, a column at a
    time) are passed over; every other row is compared cell by cell (`same_value`)."""

    a, b = _rows_by_key(stored, key), _rows_by_key(derived, key)
    by_column = [(column, _column(stored, column), _column(derived, column)) for column in columns]
    checked = _rows_that_may_differ(stored, derived, a, b, columns)
    out: list[Difference] = []
    for k in list(a) + [k for k in b if k not in a]:
        if checked is not None and k not in checked:
            continue
        record = dict(zip(key, k))
        vendor = record.pop("vendor", None)
        where = " ".join(str(v) for v in record.values())
        if k not in b or k not in a:
            out.append(Difference(surface, vendor, where, "row" if k in a else None, "row" if k in b else None))
            continue
        i, j = a[k], b[k]
        for column, stored_values, derived_values in by_column:
            x, y = stored_values[i], derived_values[j]
            if not _same_cell(x, y):
                out.append(Difference(surface, vendor, f"{where}: {column}", plain(x), plain(y)))
    return out


def _rows_that_may_differ(
    stored: pd.DataFrame,
    derived: pd.DataFrame,
    a: dict[tuple[Any, ...], int],
    b: dict[tuple[Any, ...], int],
    columns: list[str],
) -> set[tuple[Any, ...]] | None:
    """The keys whose rows `compare_frames` must compare cell by cell: on one side only, or with a
    cell that is not certainly the same on both sides: equal and of one Python type, or missing on
    both (None, NaN or NA: `same_value` takes all three as missing). Each column is compared
    whole, in numpy (cell by cell in Python is slow on a large table); None when a
    column cannot be compared so (then every row is)."""
    common = [k for k in a if k in b]
    rows_a = np.fromiter((a[k] for k in common), dtype=np.int64, count=len(common))
    rows_b = np.fromiter((b[k] for k in common), dtype=np.int64, count=len(common))
    maybe = np.zeros(len(common), dtype=bool)
    for column in columns:
        if column not in stored.columns or column not in derived.columns:
            return None
        try:
            x = stored[column].to_numpy(dtype=object, na_value=None)[rows_a]
            y = derived[column].to_numpy(dtype=object, na_value=None)[rows_b]
            same = x == y
        except (TypeError, ValueError):
            return None
        if not isinstance(same, np.ndarray) or same.dtype != bool or same.shape != maybe.shape:
            return None
        kind = stored[column].dtype.kind
        if kind in "biuf" and derived[column].dtype.kind == kind:  # one Python type on both sides (or None)
            maybe |= ~same
            continue
        kinds_x = np.fromiter(map(type, x), dtype=object, count=len(x))
        kinds_y = np.fromiter(map(type, y), dtype=object, count=len(y))
        maybe |= ~(same & (kinds_x == kinds_y))
    return {common[n] for n in np.flatnonzero(maybe)} | {k for k in a if k not in b} | {k for k in b if k not in a}


# ##### COMPARING PUBLISHED FILES


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def published_files(directory: Path) -> dict[str, Path]:
    return (
        {p.relative_to(directory).as_posix(): p for p in sorted(directory.rglob("*")) if p.is_file()}
        if directory.exists()
        else {}
    )


def _vendor_of_file(rel: str) -> str | None:
    """The vendor a file belongs to: vendors/<vendor>.html|json, replies/<vendor>.html."""
    parts = rel.split("/")
    if len(parts) == 2 and parts[0] in ("vendors", "replies"):
        return parts[1].rsplit(".", 1)[0]
    return None


def _where(node: Any) -> tuple[str | None, str]:
    """The vendor a text node belongs to (an ancestor's `data-vendor`, or the drill-down section of
    one vendor) and where it sits: its nearest ancestors that carry an id, vendor, metric, breakdown
    group or response class."""
    vendor, parts = None, []
    current = node.parent
    while current is not None and current.tag not in ("body", "html", "-document"):
        attrs = current.attributes or {}
        if vendor is None and attrs.get("data-vendor"):
            vendor = attrs["data-vendor"]
        if vendor is None and current.tag == "section" and "vendor-result" in (attrs.get("class") or ""):
            vendor = attrs.get("id")
        bits = [f"#{attrs['id']}"] if attrs.get("id") else []
        bits += [
            f"[{k}={attrs[k]}]"
            for k in ("data-vendor", "data-metric", "data-scope-value", "data-class")
            if attrs.get(k)
        ]
        if bits:
            parts.append(current.tag + "".join(bits))
        current = current.parent
    return vendor, " ".join(reversed(parts[:3]))


def _texts(markup: str) -> list[tuple[str, Any]]:
    """The text a reader sees (each text node, whitespace collapsed) with its node; not scripts or styles."""
    out = []
    root = LexborHTMLParser(markup).root
    assert root is not None  # lexbor builds an <html> root for any input, even an empty one
    for node in root.traverse(include_text=True):
        if node.tag == "-text" and node.parent is not None and node.parent.tag not in ("script", "style"):
            text = " ".join((node.text_content or "").split())
            if text:
                out.append((text, node))
    return out


def _excerpt(line: str, at: int) -> str:
    start = max(0, at - EXCERPT // 3)
    return ("…" if start else "") + line[start : start + EXCERPT] + ("…" if start + EXCERPT < len(line) else "")


def first_difference(rel: str, published: bytes, derived: bytes) -> tuple[str | None, str, Any, Any]:
    """Where two versions of a published file first differ, as (vendor, item, published, derived):
    for HTML and SVG the first text a reader sees that differs, with where it sits; else (or when
    only markup differs) the first line that differs, excerpted; for bytes that are not UTF-8 their
    SHA-256."""
    try:
        a, b = published.decode("utf-8"), derived.decode("utf-8")
    except UnicodeDecodeError:
        return None, "bytes (sha256)", _sha256(published), _sha256(derived)
    if rel.endswith((".html", ".svg")):
        left, right = _texts(a), _texts(b)
        for (x, _node_a), (y, node_b) in zip(left, right):
            if x != y:
                vendor, where = _where(node_b)
                return vendor, f"text in {where}" if where else "text", x, y
        if len(left) != len(right):
            extra, node = (left[len(right)], "published") if len(left) > len(right) else (right[len(left)], "derived")
            vendor, where = _where(extra[1])
            text = extra[0]
            return (
                vendor,
                f"text in {where}" if where else "text",
                text if node == "published" else None,
                text if node == "derived" else None,
            )
    lines_a, lines_b = a.splitlines(), b.splitlines()
    for number, (x, y) in enumerate(zip(lines_a, lines_b), start=1):
        if x != y:
            at = next((i for i, (c, d) in enumerate(zip(x, y)) if c != d), min(len(x), len(y)))
            return None, f"line {number}", _excerpt(x, at), _excerpt(y, at)
    number = min(len(lines_a), len(lines_b)) + 1
    return (
        None,
        f"line {number}",
        (lines_a[number - 1] if len(lines_a) >= number else None),
        (lines_b[number - 1] if len(lines_b) >= number else None),
    )


@dataclass(frozen=True)
class FileCheck:
    """One re-rendered file against its published copy: the copy's SHA-256 (None: nothing is
    published under that path), whether the bytes are the same, where they first differ
    (`first_difference`, for a file that differs) and, for a file compared figure by figure, the
    re-rendered content."""

    rel: str
    published_sha256: str | None
    same: bool
    first: tuple[str | None, str, Any, Any] | None = None
    content: bytes | None = None
    derived_sha256: str = ""  # the re-rendered bytes' SHA-256


class SiteComparison:
    """A `publish.site.SiteSink` for `bench rescore`: each file, as it is rendered, is compared with
    the published copy under the same path (read, hashed and compared at once, in whichever
    process rendered it), and nothing is written. Files that `keep` names (those compared figure
    by figure) are kept in `kept`. `differences` then reports as a byte-for-byte comparison of
    two folders would."""

    def __init__(self, out_dir: Path, keep: Callable[[str], bool]):
        self.out_dir = out_dir
        self.keep = keep
        self.checks: list[FileCheck] = []

    def put(self, rel: str, content: str | bytes) -> None:
        data = content.encode("utf-8") if isinstance(content, str) else content
        try:
            published: bytes | None = (self.out_dir / rel).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            published = None
        same = published == data
        first = first_difference(rel, published, data) if published is not None and not same else None
        derived = _sha256(data)
        # the same bytes have the same digest: the published file is hashed only when it differs
        published_sha256 = None if published is None else derived if same else _sha256(published)
        self.checks.append(FileCheck(rel, published_sha256, same, first, data if self.keep(rel) else None, derived))

    def fresh(self) -> SiteComparison:
        return SiteComparison(self.out_dir, self.keep)

    def taken(self) -> list[Any]:
        return list(self.checks)

    def adopt(self, items: list[Any]) -> None:
        self.checks += items

    def digests(self) -> dict[str, str]:
        return {c.rel: c.derived_sha256 for c in self.checks}

    @property
    def kept(self) -> dict[str, bytes]:
        """The re-rendered content of the files `keep` names."""
        return {c.rel: c.content for c in self.checks if c.content is not None}

    def differences(self, recorded: dict[str, str], figure_differences: dict[str, int]) -> list[Difference]:
        """Every published file against its re-rendering and against the SHA-256 recorded at
        publication (`recorded`: path → digest). Files in `figure_differences` (path → differences
        found) were compared figure by figure: for them only a change the figures do not show (e.g.
        formatting) is reported, as a digest that is not the recorded one."""
        published = set(published_files(self.out_dir))
        derived = {c.rel: c for c in self.checks}
        out: list[Difference] = []
        for rel in sorted(published | set(derived) | set(recorded)):
            vendor = _vendor_of_file(rel)
            if figure_differences.get(rel):
                continue  # its figures differ: reported above
            if rel not in published:
                out.append(
                    Difference(
                        rel,
                        vendor,
                        "(file)",
                        None if rel in derived else "missing: recorded at publication",
                        "present" if rel in derived else None,
                    )
                )
                continue
            if rel not in derived:
                out.append(
                    Difference(
                        rel,
                        vendor,
                        "(file)",
                        "present"
                        + (" (recorded at publication)" if rel in recorded else " (not recorded at publication)"),
                        None,
                    )
                )
                continue
            check = derived[rel]
            digest = check.published_sha256
            if rel in figure_differences:  # its figures agree: only other bytes can differ
                if rel in recorded and digest != recorded[rel]:
                    out.append(Difference(rel, vendor, "sha256 (figures agree)", recorded[rel], digest))
                continue
            if not check.same and check.first is not None:
                as_published = (
                    ""
                    if rel not in recorded
                    else (" (as published)" if digest == recorded[rel] else " (changed since publication)")
                )
                where_vendor, item, a, b = check.first
                out.append(Difference(rel, where_vendor or vendor, item + as_published, a, b))
            elif rel in recorded and digest != recorded[rel]:
                out.append(Difference(rel, vendor, "sha256", recorded[rel], digest))
            elif recorded and rel not in recorded:
                out.append(Difference(rel, vendor, "(file) not recorded at publication", None, "present"))
        return out


def read_text(path: Path) -> str:
    """A published file's text; a missing file reads as empty, so each of its figures is reported."""
    return path.read_text(encoding="utf-8") if path.exists() else ""
