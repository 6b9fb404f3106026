"""Golden truth rows: the pydantic records and the JSONL loader.

A golden row is one question we ask every vendor, with the answer we verified ourselves.
Rows come from a registry, from a person who checked them by hand, or from pages we planted.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from bench_assets.adapters.base import Capability
from bench_assets.errors import BenchInputError
from bench_assets.manifest import read_text_file
from bench_assets.metrics import canonical_text, document_key, normalize_text, normalize_url

ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,127}$"
TaskType = Literal["search", "extract", "answer"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceRecord(_Strict):
    """The registry record a registry-sourced row was made from (its bytes are in `registry_responses`)."""

    registry: str = Field(min_length=1)
    record_id: str = Field(min_length=1)
    record_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    retrieved_at: datetime
    request_url: str = Field(min_length=1)
    tier: Literal["T1", "T2", "T3", "T4"] = Field(description="source provenance level after DeepWeb-Bench")


class Verification(_Strict):
    """Who or what verified the row, when, and the evidence they kept."""

    verified_by: str = Field(min_length=1)
    verified_at: datetime
    evidence: str = Field(min_length=1, description="archived copy, hash or note that proves the answer")
    source_record: SourceRecord | None = None


def _check_url(url: str) -> str:
    if not (url.startswith("http://") or url.startswith("https://")) or len(url) < 12:
        raise ValueError(f"not an absolute http(s) URL: {url!r}")
    return url


HttpUrl = Annotated[str, AfterValidator(_check_url)]


def _omit_when_empty(data: dict, names: tuple[str, ...]) -> dict:
    """A row's dump without the optional list fields it leaves empty, so that rows which do not
    use them are written exactly as before they existed (the committed public split, digests)."""
    for name in names:
        if name in data and not data[name]:
            del data[name]
    return data


class SearchTask(_Strict):
    """A query and the URLs that count as a correct hit.

    ``golden_urls`` name the documents that answer the query. A result hits when it names one of
    them: the same URL after normalization, the same registry document under the published identity
    rules (:func:`bench_assets.metrics.document_key`), or one of ``equivalent_urls``: other URLs of
    the same document, listed for rows no identity rule covers (planted, file and hand-verified
    rows). An equivalent URL must not repeat a golden URL, be listed twice, or name another
    document of a registry than the golden URLs name.
    """

    type: Literal["search"]
    query: str = Field(min_length=1, max_length=400)
    golden_urls: list[HttpUrl] = Field(min_length=1)
    equivalent_urls: list[HttpUrl] = []

    @field_validator("equivalent_urls")
    @classmethod
    def _equivalents(cls, urls: list[str], info: ValidationInfo) -> list[str]:
        golden = {normalize_url(u) for u in info.data.get("golden_urls") or []}
        golden_documents = {key for key in map(document_key, golden) if key}
        seen: dict[str, int] = {}
        for i, url in enumerate(urls):
            form = normalize_url(url)
            if form in golden:
                raise ValueError(f"equivalent_urls[{i}] {url!r} is a golden URL already (the same once normalized)")
            if form in seen:
                raise ValueError(f"equivalent_urls[{i}] {url!r} repeats equivalent_urls[{seen[form]}]")
            names = document_key(form)
            if names and golden_documents and names not in golden_documents:
                raise ValueError(
                    f"equivalent_urls[{i}] {url!r} names {names}, another document than the golden URLs "
                    f"({', '.join(sorted(golden_documents))}): another document of a registry is never equivalent"
                )
            seen[form] = i
        return urls

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict:
        return _omit_when_empty(handler(self), ("equivalent_urls",))

    @property
    def accepted_urls(self) -> list[str]:
        """Every URL a hit may name: the golden URLs, then their listed equivalents."""
        return [*self.golden_urls, *self.equivalent_urls]


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
    def _defines_a_field(self) -> ExtractTask:
        if not (self.title or self.anchor_phrases or self.table_cells or self.numeric_facts or self.noise):
            raise ValueError(
                "an extract row must define at least one of title, anchor_phrases, table_cells, numeric_facts, noise"
            )
        return self


class AnswerTask(_Strict):
    """A question and its reference answer, of one of three types (DeepWeb-Bench A.3).

    * ``precise``: an exact answer (``exact_answer``) or a number with a relative tolerance
      (``number``, ``tolerance``); correct when it appears in the vendor's top results. An exact
      answer may list ``accepted_answers``: the other renderings of the same answer that count
      too (the form the source itself uses and common ones, e.g. "June 2022" and "2022-06"),
      each distinct from ``exact_answer`` and from each other once canonicalized.
    * ``range``: the reference range ``range_low`` ≤ ``range_high``; the vendor's text is read
      for a range (or value) with its method and scored by the per-cell rubric.
    * ``not_available``: no authoritative figure exists; the right answer is an explicit
      not-available statement with its justification. ``plausible_low``/``plausible_high``
      optionally give the interval a range estimate must bracket for half credit.

    ``cue`` is the phrase that names the quantity in returned text, best with its entity
    ("customer churn rate of Acme"); the reader (:func:`bench_assets.metrics.read_cell_answer`)
    reads the first sentence that contains it, so range and not-available rows need one. ``percentage`` says the quantity's unit is percent (the rubric
    then uses tolerances in percentage points).
    """

    type: Literal["answer"]
    question: str = Field(min_length=1, max_length=400)
    answer_type: Literal["precise", "range", "not_available"] = "precise"
    exact_answer: str | None = None
    number: float | None = Field(default=None, allow_inf_nan=False)
    accepted_answers: list[str] = []
    tolerance: float = Field(default=0.0, ge=0.0, le=1.0)
    range_low: float | None = Field(default=None, allow_inf_nan=False, validate_default=True)
    range_high: float | None = Field(default=None, allow_inf_nan=False, validate_default=True)
    plausible_low: float | None = Field(default=None, allow_inf_nan=False, validate_default=True)
    plausible_high: float | None = Field(default=None, allow_inf_nan=False, validate_default=True)
    percentage: bool = False
    cue: str | None = Field(default=None, max_length=200, validate_default=True)
    source_urls: list[HttpUrl] = []

    # Cross-field checks are field validators (fields validate in declaration order, so
    # `info.data` holds the answer type and the lower bound), so an error names its field.
    @field_validator("exact_answer", "number")
    @classmethod
    def _precise_only(cls, value: object, info: ValidationInfo) -> object:
        kind = info.data.get("answer_type")
        if value is not None and kind in ("range", "not_available"):
            raise ValueError(f"{info.field_name} is only for precise rows; this row's answer_type is {kind}")
        return value

    @field_validator("accepted_answers")
    @classmethod
    def _accepted(cls, answers: list[str], info: ValidationInfo) -> list[str]:
        if not answers:
            return answers
        exact = info.data.get("exact_answer")
        if exact is None:
            raise ValueError(
                "accepted_answers are other renderings of exact_answer, and this row has none "
                "(a number is matched by value, within its tolerance)"
            )
        seen = {canonical_text(exact): "exact_answer"}
        for i, answer in enumerate(answers):
            text = canonical_text(answer)
            if not text:
                raise ValueError(f"accepted_answers[{i}] is blank")
            if len(answer) > 200:
                raise ValueError(f"accepted_answers[{i}] is longer than 200 characters")
            if text in seen:
                raise ValueError(f"accepted_answers[{i}] {answer!r} is the same answer as {seen[text]}")
            seen[text] = f"accepted_answers[{i}]"
        return answers

    @field_validator("range_low", "range_high")
    @classmethod
    def _range_bounds(cls, value: float | None, info: ValidationInfo) -> float | None:
        kind = info.data.get("answer_type")
        if kind == "range" and value is None:
            raise ValueError(f"a range row needs {info.field_name} (the reference range)")
        if kind in ("precise", "not_available") and value is not None:
            raise ValueError(f"{info.field_name} is only for range rows; this row's answer_type is {kind}")
        low = info.data.get("range_low")
        if info.field_name == "range_high" and value is not None and low is not None and value < low:
            raise ValueError(f"range_high ({value:g}) must be >= range_low ({low:g})")
        return value

    @field_validator("plausible_low", "plausible_high")
    @classmethod
    def _plausible_bounds(cls, value: float | None, info: ValidationInfo) -> float | None:
        kind = info.data.get("answer_type")
        if value is not None and kind in ("precise", "range"):
            raise ValueError(f"{info.field_name} is only for not_available rows; this row's answer_type is {kind}")
        if info.field_name == "plausible_high" and kind == "not_available":
            low = info.data.get("plausible_low")
            given = (low is not None, value is not None)
            if given[0] != given[1] and "plausible_low" in info.data:
                raise ValueError("give both plausible_low and plausible_high, or neither")
            if value is not None and low is not None and value < low:
                raise ValueError(f"plausible_high ({value:g}) must be >= plausible_low ({low:g})")
        return value

    @field_validator("cue")
    @classmethod
    def _cue(cls, value: str | None, info: ValidationInfo) -> str | None:
        kind = info.data.get("answer_type")
        if kind in ("range", "not_available") and (value is None or not value.strip()):
            raise ValueError(f"a {kind} row needs a cue: the phrase that names the quantity in returned text")
        if value is not None and not value.strip():
            raise ValueError("cue must not be blank")
        return value

    @model_validator(mode="after")
    def _has_answer(self) -> AnswerTask:
        if self.answer_type == "precise" and (self.exact_answer is None) == (self.number is None):
            raise ValueError("a precise answer row needs exactly one of exact_answer or number")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict:
        return _omit_when_empty(handler(self), ("accepted_answers",))

    @property
    def answer_texts(self) -> list[str]:
        """The exact answer and its accepted renderings (empty for a number or a range row)."""
        return [] if self.exact_answer is None else [self.exact_answer, *self.accepted_answers]


Task = Annotated[SearchTask | ExtractTask | AnswerTask, Field(discriminator="type")]


ISO_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


class GoldenRow(_Strict):
    """One verified golden row.

    ``published_on`` is the day the golden page was published, where its source states it (the
    Federal Register's ``publication_date``, a planted page's date): an ISO date (``YYYY-MM-DD``),
    optional, written only when known. It decides which rows the freshness figure counts
    (`aggregate.figures.fresh_row_ids`)."""

    id: str = Field(pattern=ID_PATTERN)
    cohort: str = Field(min_length=1)
    stratum: str = Field(pattern=r"^[a-z0-9_]+$")
    provenance: Literal["registry", "hand_verified", "planted"]
    verification: Verification
    task: Task
    published_on: date | None = None

    @field_validator("published_on", mode="before")
    @classmethod
    def _iso_day(cls, value: object) -> object:
        # only a day written as YYYY-MM-DD (pydantic alone also takes a number of seconds or a datetime)
        if value is None or type(value) is date:
            return value
        if not isinstance(value, str) or not ISO_DATE.match(value):
            raise ValueError(f"published_on must be an ISO date (YYYY-MM-DD), not {value!r}")
        return value

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict:
        data = handler(self)
        if data.get("published_on") is None:  # rows without a date are written as before the field existed
            data.pop("published_on", None)
        return data

    @property
    def task_type(self) -> str:
        return self.task.type

    @property
    def urls(self) -> list[str]:
        """Every URL the row asserts something about: golden URLs and their equivalents, the page to
        extract, or answer sources."""
        t = self.task
        return list(t.accepted_urls) if t.type == "search" else [t.url] if t.type == "extract" else list(t.source_urls)

    @property
    def request_text(self) -> str:
        """What is sent to a vendor: the query, the question, or the URL to extract."""
        t = self.task
        return t.query if t.type == "search" else t.question if t.type == "answer" else t.url


def capability_of(row: GoldenRow) -> Capability:
    """The vendor capability a row is sent to: extract rows to `extract`, the others to `search`."""
    return "extract" if row.task_type == "extract" else "search"


def split_groups(rows: list[GoldenRow]) -> dict[str, str]:
    """Map each row id to its group id (the smallest row id among rows linked by shared URLs or by
    equal request text): rows about the same page are split, retired and replaced together, and so
    are rows asking the same question (compared as the leak scan compares them, `normalize_text`),
    so a public row never asks a holdout row's question about another page."""
    parent = {r.id: r.id for r in rows}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict[str, str] = {}  # a URL, or a request text ("\x00" + its normalized form) -> its first row
    for row in rows:
        links = [*row.urls] if row.task_type == "extract" else [*row.urls, "\x00" + normalize_text(row.request_text)]
        for link in links:
            if link in owner:
                a, b = find(owner[link]), find(row.id)
                if a != b:
                    parent[max(a, b)] = min(a, b)
            else:
                owner[link] = row.id
    return {r.id: find(r.id) for r in rows}


def _field_path(loc: tuple) -> str:
    # pydantic puts the discriminator tag in the location ("task.search.query"); readers want "task.query".
    parts = [str(p) for p in loc if p not in ("search", "extract", "answer")]
    return ".".join(parts) or "<row>"


def parse_golden_lines(lines: list[str], source: str) -> list[GoldenRow]:
    """Validate JSONL text: every problem is reported with its line and field; any problem fails all."""
    return [row for _, row in parse_numbered_golden_lines(lines, source)]


def parse_numbered_golden_lines(lines: list[str], source: str) -> list[tuple[int, GoldenRow]]:
    """As `parse_golden_lines`, each row with the line it is on (blank lines counted)."""
    rows: list[tuple[int, GoldenRow]] = []
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
        rows.append((number, row))
    if problems:
        raise BenchInputError(source, problems)
    if not rows:
        raise BenchInputError(source, [(None, "<file>", "no golden rows")])
    return rows


def load_golden_file(path: str | Path) -> list[GoldenRow]:
    """Load and validate a golden JSONL file; raises BenchInputError naming file, line and field."""
    return [row for _, row in load_numbered_golden_file(path)]


def load_numbered_golden_file(path: str | Path) -> list[tuple[int, GoldenRow]]:
    """As `load_golden_file`, each row with its line in the file."""
    path = Path(path)
    if not path.exists():
        raise BenchInputError(str(path), [(None, "<file>", "golden file not found")])
    return parse_numbered_golden_lines(read_text_file(path, "golden file").splitlines(), str(path))


def dump_golden_rows(rows: list[GoldenRow], path: str | Path) -> None:
    """Write rows as JSONL (stable key order so the file diff-reviews well)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r.model_dump(mode="json", exclude_defaults=False), sort_keys=True) + "\n" for r in rows)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
