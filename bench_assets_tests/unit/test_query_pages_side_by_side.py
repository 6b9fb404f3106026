"""A long list of public rows renders its pages on two cores (`publish.site._query_pages`: a forked
child takes the rows' chunks from the back while this process renders the other pages, then takes
them from the front): what the rest of the site is built from (each vendor's verdicts, the listing,
the row-scores file) and the files written must be those of one process rendering every row, in
the same order; a rescore's comparing sink sees the child's pages as if it had rendered them itself."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from bench_assets.publish import site, workers
from bench_assets.rescore.compare import SiteComparison


def _records(n: int) -> list[dict]:
    vendors = ["exa", "tavily"]
    return [
        {
            "row_id": f"row-{i:03d}",
            "stratum": "docs" if i % 2 else "news",
            "task_type": "search",
            "request_text": f"question {i}",
            "n_correct": i % 3,
            "n_scored": 2,
            "vendors": [
                {
                    "vendor": v,
                    "response_class": "ok",
                    "correct": (i + k) % 2 == 0,
                    "first_hit_rank": (i % 5) or None,
                    "hit_at_1": i % 5 == 1,
                    "fidelity": None,
                    "answer_score": 0.5,
                    "billed_usd": 0.001 * k,
                    "latency_ms": 100 + i,
                    "attempts": 1,
                }
                for k, v in enumerate(vendors)
                if (i + k) % 7  # some rows lack a vendor's entry
            ],
        }
        for i in range(n)
    ]


def _render(sink: site.SiteSink, records: list[dict], meanwhile=lambda: None) -> tuple:
    def page(rel: str, template: str, **context) -> None:
        sink.put(rel, f"{template} {context['q']['row_id']} {len(context['q']['vendors'])}")

    return site._query_pages(page, sink, records, ["exa", "tavily"], meanwhile)


def _folder(tmp: Path, records: list[dict], meanwhile=lambda: None) -> tuple:
    folder = site.SiteFolder(tmp)
    verdicts, listed, row_scores = _render(folder, records, meanwhile)
    files = {p.relative_to(tmp).as_posix(): p.read_text() for p in folder.written}
    return verdicts, listed, row_scores, [p.relative_to(tmp).as_posix() for p in folder.written], files


def _side_by_side(monkeypatch) -> None:
    monkeypatch.setenv(workers.WORKERS_ENV, "2")
    monkeypatch.setattr(site, "CHUNK_ROWS", 10)  # cut after row 30 (a chunk boundary past the half)
    monkeypatch.setattr(site, "PARALLEL_QUERY_ROWS", 20)


def test_rows_rendered_side_by_side_match_one_process(tmp_path, monkeypatch):
    records = _records(45)
    monkeypatch.setenv(workers.WORKERS_ENV, "1")
    serial = _folder(tmp_path / "serial", records)
    _side_by_side(monkeypatch)
    forked = _folder(tmp_path / "forked", records)
    assert forked == serial
    # the other pages, rendered while the child renders rows (slowly: the child takes most chunks)
    with_index = _folder(tmp_path / "with-index", records, lambda: time.sleep(0.5))
    assert with_index == serial
    assert len(serial[3]) == 45 and serial[2].count("\n") == 1 + sum(len(q["vendors"]) for q in records)


def test_a_rescore_comparison_sees_the_pages_children_rendered(tmp_path, monkeypatch):
    records = _records(45)
    monkeypatch.setenv(workers.WORKERS_ENV, "1")
    published = tmp_path / "published"
    _folder(published, records)
    (published / "queries" / "row-040.html").write_text("edited after publication")
    (published / "queries" / "row-003.html").unlink()
    _side_by_side(monkeypatch)
    comparison = SiteComparison(published, lambda rel: False)
    _render(comparison, records)
    # every page was compared, in row order, the second child's included
    assert [c.rel for c in comparison.checks] == [f"queries/row-{i:03d}.html" for i in range(45)]
    found = {(d.surface, d.item, d.published) for d in comparison.differences({}, {})}
    assert found == {
        ("queries/row-003.html", "(file)", None),
        ("queries/row-040.html", "text", "edited after publication"),
    }
    assert all(c.same for c in comparison.checks if c.rel not in {"queries/row-003.html", "queries/row-040.html"})


def _in_a_daemon(tmp: Path, records: list[dict], out) -> None:
    rows = _folder(tmp / "rows", records)
    others = site.SiteFolder(tmp / "others")
    parallel = site._on_two_cores(records)
    site._side_by_side(others, parallel, lambda: others.put("theirs.html", "b"), lambda: others.put("mine.html", "a"))
    out.put((rows, parallel, sorted(p.name for p in others.written)))


def test_a_daemonic_process_renders_alone_and_takes_each_file_once(tmp_path, monkeypatch):
    # a Celery prefork worker's child is daemonic and may not fork: the pages are rendered here
    records = _records(45)
    monkeypatch.setenv(workers.WORKERS_ENV, "1")
    serial = _folder(tmp_path / "serial", records)
    _side_by_side(monkeypatch)
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    daemon = context.Process(target=_in_a_daemon, args=(tmp_path / "daemon", records, out), daemon=True)
    daemon.start()
    rendered, parallel, others = out.get(timeout=60)
    daemon.join()
    assert rendered == serial and not parallel
    assert len(rendered[3]) == len(set(rendered[3])) == 45
    assert others == ["mine.html", "theirs.html"]  # each once
