"""Rendering a snapshot's published files from one leaderboard record.

`data/publish/<snapshot_id>/` holds, for a person: index.html (the leaderboard, which vendors can
be told apart, and the charts), a page per vendor, a page per public golden row (what each vendor
returned, how it was scored), methodology (generated from the code's own definitions and
constants), exclusions, errata, known limitations and disclosures (with the versions the snapshot
was fetched and published with); for a program: leaderboard.json with its JSON Schema beside it,
leaderboard.csv, pairwise.csv (every pair's paired test), one JSON per vendor, the public split,
public row scores, errata.json and llms.txt. Every figure on every surface is read from the same
record (`build_leaderboard`), so they cannot disagree; a figure that is not headline-eligible on its own is marked illustrative
wherever it is shown. Everything works offline: no CDN, every asset is in the directory (a
reader may follow a link out, e.g. to a vendor's documentation cited as evidence, but nothing a
page loads comes from elsewhere). The holdout never reaches these files: `find_holdout_leaks`
scans them before they are kept.

`SiteInputs` is everything the files are rendered from; `site_inputs` gathers it from the
warehouse's tables and the files beside the manifest. The publication asset and `bench rescore`
both go through it, so rescore re-renders exactly what publication rendered.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from jinja2 import (
    Environment,
    FileSystemLoader,
    StrictUndefined,
    select_autoescape,
)
from markupsafe import Markup

from bench_assets import metrics
from bench_assets.aggregate import eligibility
from bench_assets.aggregate.frontier import board_bands
from bench_assets.aggregate.provenance import content_hash
from bench_assets.manifest import Manifest
from bench_assets.publish import charts, summary
from bench_assets.publish.drilldown import DrilldownRecords, row_verdict
from bench_assets.publish.evidence import EvidenceBundle, evidence_schema
from bench_assets.publish.files import (
    EXTRA_FILE_NOTES,
    SCHEMA_FILE,
    STATIC_FILES,
    TEMPLATES,
    PublicRowScores,
    file_digest,
    leaderboard_csv,
    llms_txt,
    pairwise_csv,
    vendor_json,
)
from bench_assets.publish.format import (
    CLASS_MEANINGS,
    KEY_FIGURES,
    LEADERBOARD_COLUMNS,
    MARKDOWN,
    SCOPE_COLUMNS,
    external_href,
    format_figure,
    format_interval,
    format_number,
    format_p,
    format_points,
    format_rank_range,
    illustrative_marker,
    metric_description,
    metric_label,
    miss_reason_label,
    sort_value,
    verdict_in_context,
)
from bench_assets.publish.methodology import known_limitations, methodology_context
from bench_assets.publish.rowlinks import linked, rows_href
from bench_assets.runtime import collector_paused, in_processes, worker_count
from bench_assets.runtime.packed import CHUNK_ROWS
from bench_assets.runtime.progress import Track, untracked
from bench_assets.score.miss_reasons import MISS_REASONS, miss_code
from bench_assets.split.leaks import text_encoding

# No page lists more rows than this: a snapshot of thousands of public rows lists them over several
# pages (`queries/index.html`, `queries/index-2.html`, ...; a vendor's rows likewise), so each opens fast.
ROWS_PER_PAGE = 500
# What rendering a part of the site holds at most (a chunk of rows' records and pages), for how
# many parts go at once (`runtime.worker_count`).
SITE_PART_MIB = 300


class Pager(NamedTuple):
    """One page of a long listing: its rows' place in the whole, and every page's file name."""

    number: int
    first: int  # 1-based position of its first row
    last: int
    total: int
    files: tuple[str, ...]  # every page's file name, in order (relative to the listing's folder)


def paginate(
    rows: Sequence[Any], stem: str, per_page: int = ROWS_PER_PAGE
) -> list[tuple[str, Sequence[Any], Pager | None]]:
    """A listing as (file name, rows, pager) per page: one page `<stem>.html` without a pager when
    it fits, else `<stem>.html`, `<stem>-2.html`, ... of `per_page` rows each, each with its pager."""
    if len(rows) <= per_page:
        return [(f"{stem}.html", rows, None)]
    chunks = [rows[i : i + per_page] for i in range(0, len(rows), per_page)]
    files = tuple(f"{stem}.html" if n == 1 else f"{stem}-{n}.html" for n in range(1, len(chunks) + 1))
    return [
        (files[n - 1], chunk, Pager(n, (n - 1) * per_page + 1, (n - 1) * per_page + len(chunk), len(rows), files))
        for n, chunk in enumerate(chunks, start=1)
    ]


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html", "j2"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # no template changes while a site renders
    )
    env.globals.update(
        fmt=format_figure,
        num=format_number,
        interval=format_interval,
        sortval=sort_value,
        label=metric_label,
        describe=metric_description,
        class_meanings=CLASS_MEANINGS,
        verdict=verdict_in_context,
        mark=illustrative_marker,
        ranks=format_rank_range,
        pvalue=format_p,
        points=format_points,
        external=external_href,
        missed=miss_reason_label,
        miss_code=miss_code,
        rows_href=rows_href,
        linked=linked,
        miss_meanings=MISS_REASONS,
        correct_threshold=metrics.CORRECT_THRESHOLD,
        aggregate_min_n=eligibility.AGGREGATE_MIN_N,
        chart_min_n=eligibility.CHART_MIN_N,
    )
    env.filters["markdown"] = lambda text: Markup(MARKDOWN.render(text or ""))

    return env


# ##### THE SITE


class SiteSink(Protocol):
    """Where the site's files go as they are rendered: `put` each one; `fresh` gives an empty sink
    putting into the same place (a part of the site rendered on its own, maybe in another
    process), whose `taken` record the first sink `adopt`s."""

    def put(self, rel: str, content: str | bytes) -> None: ...

    def fresh(self) -> SiteSink: ...

    def taken(self) -> list[Any]: ...

    def adopt(self, items: list[Any]) -> None: ...

    def digests(self) -> dict[str, str]:
        """Every file put so far (adopted parts included): path → SHA-256 of its bytes."""
        ...


class SiteFolder:
    """A folder the site is written into (made new: one already there is replaced); `written`
    lists the files written, in the order they were. Publication renders into a staging folder."""

    def __init__(self, out_dir: Path, new: bool = True):
        if new:
            if out_dir.exists():
                shutil.rmtree(out_dir)
            out_dir.mkdir(parents=True)
        self.out_dir = out_dir
        self.written: list[Path] = []

    def put(self, rel: str, content: str | bytes) -> None:
        path = self.out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        self.written.append(path)

    def fresh(self) -> SiteFolder:
        return SiteFolder(self.out_dir, new=False)

    def taken(self) -> list[Any]:
        return list(self.written)

    def adopt(self, items: list[Any]) -> None:
        self.written += items

    def digests(self) -> dict[str, str]:
        return {p.relative_to(self.out_dir).as_posix(): file_digest(p) for p in self.written}


def _leaderboard_columns(board: Mapping[str, Any]) -> list[str]:
    present = {m for e in board["vendors"] for m in (e.get("metrics") or {})}
    return [m for m in LEADERBOARD_COLUMNS if m in present]


def _agent_ready(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The agent-ready record of a vendor in one shape, whatever the record carries."""
    raw = entry.get("agent_ready")
    if raw is None:
        return None
    if isinstance(raw, bool):
        return {"ready": raw, "details": {}}
    if isinstance(raw, Mapping):
        ready = next((raw[k] for k in ("ready", "value", "agent_ready", "passed") if k in raw), None)
        return {
            "ready": ready,
            "details": {k: v for k, v in raw.items() if k not in ("ready", "value", "agent_ready", "passed")},
        }
    return {"ready": None, "details": {"record": raw}}


def vendor_comparisons(board: Mapping[str, Any], vendor: str) -> list[dict[str, Any]]:
    """The vendor's paired comparison with each other vendor, from its side: rows compared, rows
    only it / only the other got right, its rate minus the other's with the interval, the p-values
    and the verdict (`better`, `worse`, or None: cannot be told apart), best-placed other first."""
    section = board.get("comparisons") or {}
    order = {v: i for i, v in enumerate(section.get("vendors") or [])}
    out = []
    for p in section.get("pairs") or []:
        if vendor not in (p["vendor_a"], p["vendor_b"]):
            continue
        mine = p["vendor_a"] == vendor
        d = p.get("difference") or {}
        value, low, high = d.get("value"), d.get("low"), d.get("high")
        out.append(
            {
                "other": p["vendor_b"] if mine else p["vendor_a"],
                "n": p["n"],
                "only_this": p["a_only"] if mine else p["b_only"],
                "only_other": p["b_only"] if mine else p["a_only"],
                "difference": value if mine or value is None else -value,
                "low": low if mine else (None if high is None else -high),
                "high": high if mine else (None if low is None else -low),
                "p_value": p["p_value"],
                "p_adjusted": p["p_adjusted"],
                "verdict": None if not p.get("better") else ("better" if p["better"] == vendor else "worse"),
            }
        )
    return sorted(out, key=lambda r: order.get(r["other"], len(order)))


def versions_view(board: Mapping[str, Any]) -> dict[str, Any]:
    """The recorded versions as the disclosures page shows them: the publication's record, and one
    line per fetch run with the packages whose version differed from the publication's."""
    versions = board.get("versions") or {}
    publication = versions.get("publication")
    reference = (publication or {}).get("packages") or {}
    runs = []
    for vendor, records in sorted((versions.get("fetch") or {}).items()):
        for r in records:
            packages = r.get("packages") or {}
            runs.append(
                {
                    "vendor": vendor,
                    **r,
                    "adapter": (r.get("adapters") or {}).get(vendor) or {},
                    "package_changes": [
                        f"{name} {packages.get(name)}"
                        for name in sorted(packages)
                        if packages.get(name) != reference.get(name)
                    ]
                    if publication
                    else [],
                }
            )
    return {"publication": publication, "fetch": runs}


def evidence_view(evidence: EvidenceBundle | None) -> dict[str, Any] | None:
    """The evidence bundle as the Data and Disclosures pages show it: its schema, and per vendor
    the level published, why, the level its terms allow, the terms' file and what was withheld."""
    if evidence is None:
        return None
    index = evidence.published_index
    return {"schema": evidence_schema(), "index": index, "vendors": index["vendors"]}


class _Site:
    """The site's files, rendered from its inputs in parts that need nothing of each other (the
    pages without rows, the listings of the public rows, the rows' pages a chunk at a time, each
    vendor's pages), so that the parts can be rendered side by side (`render_site`)."""

    def __init__(self, inputs: SiteInputs):
        self.inputs = inputs
        self.board = inputs.board
        self.manifest = inputs.manifest
        self.env = _environment()
        # compiled here, once: each part is rendered in a process forked from this one, which
        # would otherwise compile every template it uses again
        for name in self.env.list_templates(extensions=["j2"]):
            self.env.get_template(name)
        self.scored = [e for e in self.board["vendors"] if e["status"] == "scored"]
        self.replied = {v for v in inputs.replies if v in self.manifest.vendors}
        self.extra = {rel: EXTRA_FILE_NOTES.get(rel, "") for rel in sorted(inputs.extra_files)}
        self.has_queries = len(inputs.queries) > 0

    def page(self, sink: SiteSink, rel: str, template: str, **context: Any) -> None:
        depth = rel.count("/")
        sink.put(
            rel,
            self.env.get_template(template).render(
                board=self.board,
                manifest=self.manifest,
                root="../" * depth,
                active=context.pop("active", ""),
                **context,
            ),
        )

    def parts(self) -> list[tuple[float, Callable[[SiteSink], None]]]:
        """(cost, render) of each part: what it puts is the same whichever process renders it."""
        rows = len(self.inputs.queries)
        parts: list[tuple[float, Callable[[SiteSink], None]]] = [(rows, self.front_pages), (rows / 4, self.listings)]
        parts += [(CHUNK_ROWS, partial(self.row_pages, start)) for start in range(0, rows, CHUNK_ROWS)]
        parts += [(len(self.inputs.figures.get(e["vendor"], ())), partial(self.vendor_pages, e)) for e in self.scored]
        return parts

    def front_pages(self, sink: SiteSink) -> None:
        """Every file that does not list the public rows."""
        inputs, board = self.inputs, self.board
        site_charts = []
        for chart in charts.site_charts(board, inputs.ttr_observations):
            figure = chart.build()
            if figure is not None:
                sink.put(f"charts/{chart.name}.svg", charts.render(figure))
                site_charts.append(chart)
        for vendor, reply in sorted(inputs.replies.items()):
            if vendor in self.replied:
                sink.put(f"replies/{reply.filename}", reply.data)
                self.page(sink, f"replies/{vendor}.html", "reply.html.j2", vendor=vendor, reply=reply, active="")
        self.page(
            sink,
            "index.html",
            "index.html.j2",
            columns=_leaderboard_columns(board),
            charts=site_charts,
            replied=self.replied,
            split_counts=dict(inputs.split_counts),
            has_queries=self.has_queries,
            agent=_agent_ready,
            first=summary.first_place(board),
            gaps=summary.gaps_to_next(board),
            summary_cost=summary.summary_cost(board),
            budget_bands=board_bands(board),
            lower_is_better=summary.LOWER_IS_BETTER,
            active="leaderboard",
        )
        self.page(
            sink, "methodology.html", "methodology.html.j2", m=methodology_context(self.manifest), active="methodology"
        )
        self.page(sink, "exclusions.html", "exclusions.html.j2", extra=self.extra, active="exclusions")
        errata = inputs.errata
        errata_keys = list(dict.fromkeys(k for item in errata for k in item))
        self.page(sink, "errata.html", "errata.html.j2", errata=errata, errata_keys=errata_keys, active="errata")
        self.page(
            sink,
            "limitations.html",
            "limitations.html.j2",
            limitations=known_limitations(board, self.manifest),
            active="limitations",
        )
        evidence = evidence_view(inputs.evidence)
        self.page(
            sink,
            "disclosures.html",
            "disclosures.html.j2",
            disclosures=inputs.disclosures,
            versions=versions_view(board),
            has_queries=self.has_queries,
            evidence=evidence,
            active="disclosures",
        )
        for rel, text in sorted(inputs.extra_files.items()):
            sink.put(rel, text)
        for rel, content in (inputs.evidence.files() if inputs.evidence is not None else {}).items():
            sink.put(rel, content)
        self.page(
            sink,
            "data.html",
            "data.html.j2",
            has_queries=self.has_queries,
            extra=self.extra,
            evidence=evidence,
            active="data",
        )
        sink.put("leaderboard.schema.json", SCHEMA_FILE.read_text(encoding="utf-8"))
        sink.put("leaderboard.csv", leaderboard_csv(board))
        sink.put("pairwise.csv", pairwise_csv(board))
        sink.put("public_split.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in inputs.public_rows))
        sink.put("errata.json", json.dumps(errata, indent=2) + "\n")
        for asset in STATIC_FILES:
            sink.put(asset, (TEMPLATES / asset).read_text(encoding="utf-8"))

    def stated_files(self, sink: SiteSink, digests: Mapping[str, str]) -> None:
        """The files that state the content hash of all the others (`aggregate.provenance`), put
        last: leaderboard.json and llms.txt, from the record with its `content_hash`."""
        board = {**self.board, "content_hash": content_hash(digests.items())}
        sink.put("leaderboard.json", json.dumps(board, indent=2, sort_keys=True) + "\n")
        sink.put(
            "llms.txt",
            llms_txt(board, self.manifest, self.has_queries, self.extra, has_evidence=self.inputs.evidence is not None),
        )

    def listings(self, sink: SiteSink) -> None:
        """The public rows' listing, and `public_row_scores.csv` (every vendor's figures on each
        row) when there are public rows."""
        for name, rows, pager in paginate(self.inputs.listing, "index", ROWS_PER_PAGE):
            self.page(sink, f"queries/{name}", "queries.html.j2", pager=pager, queries=rows, active="queries")
        if not self.inputs.listing:
            return
        by_row = [{f["row_id"]: f for f in figures} for _, figures in sorted(self.inputs.figures.items())]
        row_scores = PublicRowScores()
        for row in self.inputs.listing:
            for figures in by_row:
                if row["row_id"] in figures:
                    row_scores.add(figures[row["row_id"]])
        sink.put("public_row_scores.csv", row_scores.text())

    def row_pages(self, start: int, sink: SiteSink) -> None:
        """The pages of the public rows `start` to `start + CHUNK_ROWS` - 1 (one packed chunk)."""
        queries = self.inputs.queries
        stop = min(start + CHUNK_ROWS, len(queries))
        records = queries.span(start, stop) if isinstance(queries, DrilldownRecords) else queries[start:stop]
        for q in records:
            self.page(sink, f"queries/{q['row_id']}.html", "query.html.j2", q=q, active="queries")

    def vendor_pages(self, e: dict[str, Any], sink: SiteSink) -> None:
        """A scored vendor's page, the pages that list the rest of its rows, and its JSON file."""
        vendor = e["vendor"]
        verdicts = [row_verdict(f) for f in self.inputs.figures.get(vendor, ())]
        listing = paginate(verdicts, vendor, ROWS_PER_PAGE)
        self.page(
            sink,
            f"vendors/{vendor}.html",
            "vendor.html.j2",
            e=e,
            spec=self.manifest.vendors.get(vendor),
            key_figures=[m for m in KEY_FIGURES if m in e["metrics"]],
            scope_columns=SCOPE_COLUMNS,
            verdicts=verdicts,
            listed=listing[0][1],
            pager=listing[0][2],
            pairs=vendor_comparisons(self.board, vendor),
            agent=_agent_ready(e),
            has_reply=vendor in self.replied,
            active="leaderboard",
        )
        for name, rows, pager in listing[1:]:  # the rest of a long list of rows, a page each
            self.page(
                sink, f"vendors/{name}", "vendor_rows.html.j2", pager=pager, listed=rows, e=e, active="leaderboard"
            )
        sink.put(f"vendors/{vendor}.json", vendor_json(self.board, e, verdicts))


def render_site(out: Path | SiteSink, inputs: SiteInputs, track: Track = untracked) -> SiteSink:
    """Render every published file of the snapshot into `out` (a folder, made new: `SiteFolder`;
    or any other `SiteSink`, e.g. rescore's comparison with the published files); returns the
    sink. The site's parts are rendered side by side (`runtime.in_processes`, the costliest first),
    each into a fresh sink the first one adopts: the same files whichever process rendered them.
    `track` follows the parts as they are adopted."""
    sink = SiteFolder(out) if isinstance(out, Path) else out
    site = _Site(inputs)
    parts = site.parts()

    def render(part: tuple[float, Callable[[SiteSink], None]]) -> list[Any]:
        mine = sink.fresh()
        # the records unpacked for the pages, and the pages, form no cycles worth the collector's walks
        with collector_paused():
            part[1](mine)
        return mine.taken()

    rendered = in_processes(parts, render, worker_count(len(parts), job_mib=SITE_PART_MIB), lambda p: p[0])
    for taken in track(rendered, len(parts), "site parts"):
        sink.adopt(taken)
    site.stated_files(sink, sink.digests())
    return sink


class Reply(NamedTuple):
    """A vendor's reply as filed: its file name (kept when published) and its bytes, published as
    they are (so the SHA-256 in review.json is the published file's); its page shows the text."""

    filename: str
    data: bytes

    @property
    def encoding(self) -> str:
        """How the page shows the text: UTF-8 if it is, else Windows-1252, else Latin-1 (which
        decodes any byte); the published file itself is the bytes, unchanged."""

        return text_encoding(self.data)

    @property
    def text(self) -> str:
        return self.data.decode(self.encoding)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class SiteInputs:
    """Everything a snapshot's published files are rendered from: the leaderboard record and what
    `render_site` takes beside it. Rendering the same inputs gives the same bytes (no clock is read)."""

    board: dict[str, Any]
    manifest: Manifest
    public_rows: list[dict[str, Any]]
    errata: list[dict[str, Any]]
    queries: Sequence[dict[str, Any]] = field(default_factory=list)  # a list, or packed (`runtime.packed`)
    # each public row's line in the queries' listing: row_id, stratum, task_type, request_text,
    # n_correct, n_scored
    listing: list[dict[str, Any]] = field(default_factory=list)
    figures: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # per vendor (`drilldown.row_figures`)
    ttr_observations: dict[str, tuple[list[float], list[bool]]] = field(default_factory=dict)
    replies: dict[str, Reply] = field(default_factory=dict)
    disclosures: str | None = None
    split_counts: dict[str, int] = field(default_factory=dict)
    extra_files: dict[str, str] = field(default_factory=dict)
    evidence: EvidenceBundle | None = None

    def render(self, out: Path | SiteSink, track: Track = untracked) -> SiteSink:
        return render_site(out, self, track)
