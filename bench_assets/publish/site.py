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
import multiprocessing
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from jinja2 import (
    Environment,
    FileSystemLoader,
    StrictUndefined,
    select_autoescape,
)
from jinja2.filters import do_truncate
from markupsafe import Markup

from bench_assets import metrics
from bench_assets.aggregate import eligibility
from bench_assets.manifest import Manifest
from bench_assets.publish import charts
from bench_assets.publish.drilldown import row_verdict
from bench_assets.publish.evidence import EvidenceBundle, evidence_schema
from bench_assets.publish.files import (
    EXTRA_FILE_NOTES,
    SCHEMA_FILE,
    STATIC_FILES,
    TEMPLATES,
    PublicRowScores,
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
    sort_value,
    verdict_in_context,
)
from bench_assets.publish.methodology import known_limitations, methodology_context
from bench_assets.publish.packed import CHUNK_ROWS
from bench_assets.publish.records import DrilldownRecords
from bench_assets.publish.row_page import vendor_sections, verdict_rows
from bench_assets.publish.vendor_listing import verdict_lines
from bench_assets.publish.workers import ForkedJob, worker_count
from bench_assets.score.partition import cyclic_gc_paused
from bench_assets.split.leaks import text_encoding

# what the public queries' listing shows of each row
_LISTED = ("row_id", "stratum", "task_type", "request_text", "n_correct", "n_scored")
# No page lists more rows than this: a snapshot of thousands of public rows lists them over several
# pages (`queries/index.html`, `queries/index-2.html`, ...; a vendor's rows likewise), so each opens fast.
ROWS_PER_PAGE = 500


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


def _listing_pages(
    page: Any,
    folder: str,
    template: str,
    key: str,
    listing: list[tuple[str, Sequence[Any], Pager | None]],
    **context: Any,
) -> None:
    """Render each page of a listing (`paginate`) into `folder`, its rows as `key`."""
    for name, rows, pager in listing:
        page(f"{folder}/{name}", template, pager=pager, **{key: rows}, **context)


# what a plain dict answers as an attribute (its methods): a key of the same name is not read as one
_DICT_ATTRIBUTES = frozenset(dir({}))


class _SiteEnvironment(Environment):
    """Jinja's environment, reading a plain dict's key at once where Jinja would first ask the dict
    for an attribute of that name and read the key only after that failed: the pages read millions
    of fields of the drill-down records, and each failed attribute raised an exception. A name that
    is a dict attribute (`items`, `get`, ...) is still read as Jinja reads it."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)


def _environment() -> Environment:
    env = _SiteEnvironment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html", "j2"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # a template is not changed while a site renders: no file check per page
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
        correct_threshold=metrics.CORRECT_THRESHOLD,
        aggregate_min_n=eligibility.AGGREGATE_MIN_N,
        chart_min_n=eligibility.CHART_MIN_N,
    )
    env.filters["markdown"] = lambda text: Markup(MARKDOWN.render(text or ""))

    # a row page's vendor parts (a hundred thousand at 12,600 rows) are written in Python, their
    # texts cut as the `truncate` filter cuts
    def truncate(text: str, length: int) -> str:
        return str(do_truncate(env, text, length))

    env.globals["verdict_rows"] = verdict_rows
    env.globals["verdict_lines"] = verdict_lines  # a vendor's listing of the public rows
    env.globals["vendor_sections"] = lambda task_type, vendors, k_values, live: vendor_sections(
        task_type, vendors, k_values, live, truncate
    )
    return env


# ##### THE SITE


class SiteSink(Protocol):
    """Where `render_site` puts each file it renders. `mark` and `since` take what was put after a
    point (in a forked child that rendered some pages) and `adopt` adds it in the parent."""

    def put(self, rel: str, content: str | bytes) -> None: ...

    def mark(self) -> int: ...

    def since(self, mark: int) -> list[Any]: ...

    def adopt(self, items: list[Any]) -> None: ...


class SiteFolder:
    """A new folder the site is written into (one already there is replaced); `written` lists the
    files in the order they were written. Publication renders into a staging folder."""

    def __init__(self, out_dir: Path):
        if out_dir.exists():
            shutil.rmtree(out_dir)
        out_dir.mkdir(parents=True)
        self.out_dir = out_dir
        self.written: list[Path] = []
        self._folders: set[Path] = set()

    def put(self, rel: str, content: str | bytes) -> None:
        # the folder is the site's own, new: no file is there to be replaced atomically, and each
        # folder is made once
        path = self.out_dir / rel
        if path.parent not in self._folders:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._folders.add(path.parent)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        self.written.append(path)

    def mark(self) -> int:
        return len(self.written)

    def since(self, mark: int) -> list[Any]:
        return self.written[mark:]

    def adopt(self, items: list[Any]) -> None:
        self.written += items


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


# A site of at least this many public rows renders its rows' pages on two cores, this process and a
# forked child: at 12,600 golden rows there are 8,800 of them, a third of publication's time.
PARALLEL_QUERY_ROWS = 2 * CHUNK_ROWS


class _QueryPages(NamedTuple):
    """What rendering some public rows' pages yields for the rest of the site."""

    verdicts: dict[str, list[dict[str, Any]]]  # each vendor's verdict on each row, in row order
    listed: list[dict[str, Any]]  # each row's line in the queries' listing
    row_scores: str  # their lines of `public_row_scores.csv` (no header)
    files: list[Any]  # what the site's sink took of their pages (`SiteSink.since`)


def _query_span(
    page: Any, sink: SiteSink, queries: Sequence[dict[str, Any]], vendors: list[str], span: tuple[int, int]
) -> _QueryPages:
    """Render the pages of the public rows `span` (start, stop), reading their records once (they
    are assembled as they are read: `publish.records`)."""
    before = sink.mark()
    verdicts: dict[str, list[dict[str, Any]]] = {v: [] for v in vendors}
    listed: list[dict[str, Any]] = []
    row_scores = PublicRowScores(header=False)
    records = queries.span(*span) if isinstance(queries, DrilldownRecords) else queries[span[0] : span[1]]
    # the records unpacked for the pages, and the pages, form no cycles (none left after 1,000
    # pages): the collector's walks over them were a tenth of their time
    with cyclic_gc_paused():
        for q in records:
            page(f"queries/{q['row_id']}.html", "query.html.j2", q=q, active="queries")
            for entry in q["vendors"]:
                if entry["vendor"] in verdicts:
                    verdicts[entry["vendor"]].append(row_verdict(q, entry))
            listed.append({k: q[k] for k in _LISTED})
            row_scores.add(q)
    return _QueryPages(verdicts, listed, row_scores.text(), sink.since(before))


def _joined(parts: Sequence[_QueryPages], vendors: list[str]) -> _QueryPages:
    """Parts of consecutive rows, in row order, as one."""
    verdicts: dict[str, list[dict[str, Any]]] = {v: [] for v in vendors}
    for part in parts:
        for vendor, found in part.verdicts.items():
            verdicts[vendor] += found
    return _QueryPages(
        verdicts,
        [line for part in parts for line in part.listed],
        "".join(part.row_scores for part in parts),
        [f for part in parts for f in part.files],
    )


class _Chunks:
    """The rows' chunks shared out between two processes while they last: one takes them from the
    front, the other from the back, so each renders as many as it has time for and together they
    finish at once, whatever else one of them has to do (a chunk is where a packed one is cut)."""

    def __init__(self, rows: int):
        self.rows = rows
        # the next chunk from the front, and one past the next from the back, shared with the child
        self._next = multiprocessing.get_context("fork").Array("q", [0, -(-rows // CHUNK_ROWS)])

    def take(self, front: bool) -> tuple[int, int] | None:
        with self._next.get_lock():
            first, end = self._next[0], self._next[1]
            if first >= end:
                return None
            number = first if front else end - 1
            self._next[0 if front else 1] = number + 1 if front else number
        return number * CHUNK_ROWS, min((number + 1) * CHUNK_ROWS, self.rows)


def _on_two_cores(queries: Sequence[dict[str, Any]]) -> bool:
    """Whether the site is rendered on two cores: a long list of public rows, two workers allowed,
    and a process that may have children (a Celery prefork worker's child is daemonic: it may not)."""
    return len(queries) >= PARALLEL_QUERY_ROWS and worker_count(2) >= 2 and not multiprocessing.current_process().daemon


def _side_by_side(sink: SiteSink, parallel: bool, theirs: Callable[[], None], mine: Callable[[], None]) -> None:
    """`theirs` in a forked child while this process does `mine` (`parallel`), the child's files
    taken into the sink; else one after the other here."""
    if not parallel:
        mine()
        theirs()
        return

    def child() -> list[Any]:
        before = sink.mark()
        theirs()
        return sink.since(before)

    with ForkedJob(child) as job:
        mine()
        sink.adopt(job.result())  # the child's files: this process's sink did not see them


def _query_pages(
    page: Any,
    sink: SiteSink,
    queries: Sequence[dict[str, Any]],
    vendors: list[str],
    meanwhile: Callable[[], None] = lambda: None,
) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]], str]:
    """Render each public row's page, and `meanwhile` the pages that do not need them; returns what
    the other pages need of them: each vendor's verdict on every row, each row's line in the
    listing, and `public_row_scores.csv`. A long list is rendered on two cores: a forked child
    takes the rows' chunks from the back while this process renders `meanwhile`'s pages and then
    takes them from the front (`_Chunks`); the child sends back what it gathered and what the sink
    took of its pages, and the two are joined in row order, so the site is the same file for file."""
    if not _on_two_cores(queries):
        meanwhile()
        alone = _query_span(page, sink, queries, vendors, (0, len(queries)))
        return alone.verdicts, alone.listed, PublicRowScores().text() + alone.row_scores

    chunks = _Chunks(len(queries))

    def lane(front: bool) -> _QueryPages:
        parts = []
        while (span := chunks.take(front)) is not None:
            parts.append(_query_span(page, sink, queries, vendors, span))
        return _joined(parts if front else parts[::-1], vendors)

    with ForkedJob(lambda: lane(front=False)) as child:
        meanwhile()
        mine = lane(front=True)
        theirs = child.result()
    sink.adopt(theirs.files)  # the child's files: this process's sink did not see them
    both = _joined([mine, theirs], vendors)
    return both.verdicts, both.listed, PublicRowScores().text() + both.row_scores


def render_site(
    out: Path | SiteSink,
    board: dict[str, Any],
    manifest: Manifest,
    public_rows: list[dict[str, Any]],
    errata: list[dict[str, Any]],
    *,
    queries: Sequence[dict[str, Any]] = (),
    ttr_observations: Mapping[str, tuple[Sequence[float], Sequence[bool]]] | None = None,
    replies: Mapping[str, Reply] | None = None,
    disclosures: str | None = None,
    split_counts: Mapping[str, int] | None = None,
    extra_files: Mapping[str, str] | None = None,
    evidence: EvidenceBundle | None = None,
) -> SiteSink:
    """Render every published file of the snapshot into `out` (a folder, made new: `SiteFolder`;
    or any other `SiteSink`, e.g. rescore's comparison with the published files); returns the sink.

    `queries` are the public rows' drill-down records (`drilldown.query_drilldowns`),
    `ttr_observations` the sentinel observations per vendor for the Kaplan–Meier chart,
    `replies` each vendor's reply (published verbatim under its own file name, and as a page),
    `disclosures` the operator's conflict-of-interest declaration (markdown), `split_counts` the
    public and holdout row counts, `extra_files` further published files (relative path → text,
    e.g. integrity's holdout commitments), listed on the Data page and in llms.txt, `evidence` the
    evidence bundle (`publish.evidence`: what each vendor returned for every public row).
    """
    env = _environment()
    sink = SiteFolder(out) if isinstance(out, Path) else out
    put = sink.put
    replies = dict(replies or {})
    scored = [e for e in board["vendors"] if e["status"] == "scored"]
    extra = {rel: EXTRA_FILE_NOTES.get(rel, "") for rel in sorted(extra_files or {})}

    def page(rel: str, template: str, **context: Any) -> None:
        depth = rel.count("/")
        put(
            rel,
            env.get_template(template).render(
                board=board, manifest=manifest, root="../" * depth, active=context.pop("active", ""), **context
            ),
        )

    site_charts: list[Any] = []
    replied: set[str] = set()

    def pages_without_rows() -> None:
        """Every file that does not list the public rows (rendered while they are)."""
        for chart in charts.site_charts(board, ttr_observations):
            figure = chart.build()
            if figure is not None:
                put(f"charts/{chart.name}.svg", charts.render(figure))
                site_charts.append(chart)
        for vendor, reply in sorted(replies.items()):
            if vendor in manifest.vendors:
                put(f"replies/{reply.filename}", reply.data)
                page(f"replies/{vendor}.html", "reply.html.j2", vendor=vendor, reply=reply, active="")
                replied.add(vendor)
        page(
            "index.html",
            "index.html.j2",
            columns=_leaderboard_columns(board),
            charts=site_charts,
            replied=replied,
            split_counts=dict(split_counts or {}),
            has_queries=bool(queries),
            agent=_agent_ready,
            active="leaderboard",
        )
        page("methodology.html", "methodology.html.j2", m=methodology_context(manifest), active="methodology")
        page("exclusions.html", "exclusions.html.j2", extra=extra, active="exclusions")
        errata_keys = list(dict.fromkeys(k for item in errata for k in item))
        page("errata.html", "errata.html.j2", errata=errata, errata_keys=errata_keys, active="errata")
        page(
            "limitations.html",
            "limitations.html.j2",
            limitations=known_limitations(board, manifest),
            active="limitations",
        )
        page(
            "disclosures.html",
            "disclosures.html.j2",
            disclosures=disclosures,
            versions=versions_view(board),
            has_queries=bool(queries),
            evidence=evidence_view(evidence),
            active="disclosures",
        )
        for rel, text in sorted((extra_files or {}).items()):
            put(rel, text)
        bundle = evidence.files() if evidence is not None else {}
        for rel, content in bundle.items():
            put(rel, content)
        page(
            "data.html",
            "data.html.j2",
            has_queries=bool(queries),
            extra=extra,
            evidence=evidence_view(evidence),
            active="data",
        )
        put("leaderboard.json", json.dumps(board, indent=2, sort_keys=True) + "\n")
        put("leaderboard.schema.json", SCHEMA_FILE.read_text(encoding="utf-8"))
        put("leaderboard.csv", leaderboard_csv(board))
        put("pairwise.csv", pairwise_csv(board))
        put("public_split.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in public_rows))
        put("errata.json", json.dumps(errata, indent=2) + "\n")
        put("llms.txt", llms_txt(board, manifest, bool(queries), extra, has_evidence=evidence is not None))
        for asset in STATIC_FILES:
            put(asset, (TEMPLATES / asset).read_text(encoding="utf-8"))

    verdicts_by_vendor, listed_rows, row_scores = _query_pages(
        page, sink, queries, [e["vendor"] for e in scored], pages_without_rows
    )

    def vendor_pages(entries: list[dict[str, Any]]) -> None:
        for e in entries:
            verdicts = verdicts_by_vendor[e["vendor"]]
            listing = paginate(verdicts, e["vendor"], ROWS_PER_PAGE)
            page(
                f"vendors/{e['vendor']}.html",
                "vendor.html.j2",
                e=e,
                spec=manifest.vendors.get(e["vendor"]),
                key_figures=[m for m in KEY_FIGURES if m in e["metrics"]],
                scope_columns=SCOPE_COLUMNS,
                verdicts=verdicts,
                listed=listing[0][1],
                pager=listing[0][2],
                pairs=vendor_comparisons(board, e["vendor"]),
                agent=_agent_ready(e),
                has_reply=e["vendor"] in replied,
                active="leaderboard",
            )
            # the rest of a long list of rows, a page each
            _listing_pages(page, "vendors", "vendor_rows.html.j2", "listed", listing[1:], e=e, active="leaderboard")
            put(f"vendors/{e['vendor']}.json", vendor_json(board, e, verdicts))

    def listings() -> None:
        vendor_pages(scored[0::2])
        queries_listing = paginate(listed_rows, "index", ROWS_PER_PAGE)
        _listing_pages(page, "queries", "queries.html.j2", "queries", queries_listing, active="queries")
        if listed_rows:
            put("public_row_scores.csv", row_scores)

    # every other vendor's pages in a forked child, beside the rest here
    _side_by_side(sink, _on_two_cores(queries), lambda: vendor_pages(scored[1::2]), listings)
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
    queries: Sequence[dict[str, Any]] = field(default_factory=list)  # a list, or packed (`publish.packed`)
    ttr_observations: dict[str, tuple[list[float], list[bool]]] = field(default_factory=dict)
    replies: dict[str, Reply] = field(default_factory=dict)
    disclosures: str | None = None
    split_counts: dict[str, int] = field(default_factory=dict)
    extra_files: dict[str, str] = field(default_factory=dict)
    evidence: EvidenceBundle | None = None

    def render(self, out: Path | SiteSink) -> SiteSink:
        return render_site(
            out,
            self.board,
            self.manifest,
            self.public_rows,
            self.errata,
            queries=self.queries,
            ttr_observations=self.ttr_observations,
            replies=self.replies,
            disclosures=self.disclosures,
            split_counts=self.split_counts,
            extra_files=self.extra_files,
            evidence=self.evidence,
        )
