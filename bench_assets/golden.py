"""Golden truth rows: the pydantic records and the JSONL loader.

A golden row is one question we ask every vendor, with the answer we verified ourselves.
Rows come from a registry, from a person who checked them by hand, or from pages we planted.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from bench_assets.errors import BenchInputError

ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,127}$"
TaskType = Literal["search", "extract", "answer"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Verification(_Strict):
    """Who or what verified the row, when, and the evidence they kept."""

    verified_by: str = Field(min_length=1)
    verified_at: datetime
    evidence: str = Field(min_length=1, description="archived copy, hash or note that proves the answer")


def _check_url(url: str) -> str:
    if not (url.startswith("http://") or url.startswith("https://")) or len(url) < 12:
        raise ValueError(f"not an absolute http(s) URL: {url!r}")
    return url


HttpUrl = Annotated[str, AfterValidator(_check_url)]


class SearchTask(_Strict):
    """A query and the URLs that count as a correct hit."""

    type: Literal["search"]
    query: str = Field(min_length=1, max_length=400)
    golden_urls: list[HttpUrl] = Field(min_length=1)


class ExtractTask(_Strict):
    """A page and the fields a faithful extraction of it must contain (or leave out)."""

    type: Literal["extract"]
    url: HttpUrl
    title: str | None = None
    anchor_phrases: list[str] = []
    table_cells: list[str] = []
    numeric_facts: list[float] = []
    numeric_tolerance: float = Field(default=0.0, ge=0.0, le=1.0)
    noise: list[str] = []

    @model_validator(mode="after")
    def _defines_a_field(self) -> "ExtractTask":
        if not (self.title or self.anchor_phrases or self.table_cells or self.numeric_facts or self.noise):
            raise ValueError("an extract row must define at least one of title, anchor_phrases, "
                             "table_cells, numeric_facts, noise")
        return self


class AnswerTask(_Strict):
    """A question with an exact answer, or a number with a relative tolerance."""

    type: Literal["answer"]
    question: str = Field(min_length=1, max_length=400)
    answer_type: Literal["precise", "range", "not_available"] = "precise"
    exact_answer: str | None = None
    number: float | None = None
    tolerance: float = Field(default=0.0, ge=0.0, le=1.0)
    source_urls: list[HttpUrl] = []

    @model_validator(mode="after")
    def _has_answer(self) -> "AnswerTask":
        if self.answer_type == "precise" and (self.exact_answer is None) == (self.number is None):
            raise ValueError("a precise answer row needs exactly one of exact_answer or number")
        return self


Task = Annotated[Union[SearchTask, ExtractTask, AnswerTask], Field(discriminator="type")]


class GoldenRow(_Strict):
    """One verified golden row."""

    id: str = Field(pattern=ID_PATTERN)
    cohort: str = Field(min_length=1)
    stratum: str = Field(pattern=r"^[a-z0-9_]+$")
    provenance: Literal["registry", "hand_verified", "planted"]
    verification: Verification
    task: Task

    @property
    def task_type(self) -> str:
        return self.task.type

    @property
    def urls(self) -> list[str]:
        """Every URL the row asserts something about: golden URLs, the page to extract, or answer sources."""
        t = self.task
        return list(t.golden_urls) if t.type == "search" else [t.url] if t.type == "extract" else list(t.source_urls)

    @property
    def request_text(self) -> str:
        """What is sent to a vendor: the query, the question, or the URL to extract."""
        t = self.task
        return t.query if t.type == "search" else t.question if t.type == "answer" else t.url


def _field_path(loc: tuple) -> str:
    # pydantic puts the discriminator tag in the location ("task.search.query"); readers want "task.query".
    parts = [str(p) for p in loc if p not in ("search", "extract", "answer")]
    return ".".join(parts) or "<row>"


def parse_golden_lines(lines: list[str], source: str) -> list[GoldenRow]:
    """Validate JSONL text: every problem is reported with its line and field; any problem fails all."""
    rows: list[GoldenRow] = []
    problems: list[tuple[int | None, str, str]] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append((number, "<json>", f"not valid JSON: {exc.msg} at column {exc.colno}"))
            continue
        if not isinstance(data, dict):
            problems.append((number, "<row>", "each line must be a JSON object"))
            continue
        try:
            row = GoldenRow.model_validate(data)
        except ValidationError as exc:
            for err in exc.errors():
                problems.append((number, _field_path(err["loc"]), err["msg"]))
            continue
        if row.id in seen:
            problems.append((number, "id", f"duplicate id {row.id!r} (first on line {seen[row.id]})"))
            continue
        seen[row.id] = number
        rows.append(row)
    if problems:
        raise BenchInputError(source, problems)
    if not rows:
        raise BenchInputError(source, [(None, "<file>", "no golden rows")])
    return rows


def load_golden_file(path: str | Path) -> list[GoldenRow]:
    """Load and validate a golden JSONL file; raises BenchInputError naming file, line and field."""
    path = Path(path)
    if not path.exists():
        raise BenchInputError(str(path), [(None, "<file>", "golden file not found")])
    return parse_golden_lines(path.read_text(encoding="utf-8").splitlines(), str(path))


def dump_golden_rows(rows: list[GoldenRow], path: str | Path) -> None:
    """Write rows as JSONL (stable key order so the file diff-reviews well)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r.model_dump(mode="json", exclude_defaults=False), sort_keys=True) + "\n" for r in rows)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
