"""A long list of public rows renders its pages in two forked children (`publish.site._query_pages`):
what the rest of the site is built from (each vendor's verdicts, the listing, the row-scores file)
and the files written must be those of one process rendering every row, in the same order."""

from __future__ import annotations

from pathlib import Path

from bench_assets.publish import site, workers


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


def _render(tmp: Path, records: list[dict]) -> tuple:
    written: list[Path] = []

    def page(rel: str, template: str, **context) -> None:
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{template} {context['q']['row_id']} {len(context['q']['vendors'])}")
        written.append(path)

    verdicts, listed, row_scores = site._query_pages(page, written, records, ["exa", "tavily"])
    files = {p.relative_to(tmp).as_posix(): p.read_text() for p in written}
    return verdicts, listed, row_scores, [p.relative_to(tmp).as_posix() for p in written], files


def test_rows_rendered_side_by_side_match_one_process(tmp_path, monkeypatch):
    records = _records(45)
    monkeypatch.setenv(workers.WORKERS_ENV, "1")
    serial = _render(tmp_path / "serial", records)
    monkeypatch.setenv(workers.WORKERS_ENV, "2")
    monkeypatch.setattr(site, "CHUNK_ROWS", 10)  # cut after row 30 (a chunk boundary past the half)
    monkeypatch.setattr(site, "PARALLEL_QUERY_ROWS", 20)
    forked = _render(tmp_path / "forked", records)
    assert forked == serial
    assert len(serial[3]) == 45 and serial[2].count("\n") == 1 + sum(len(q["vendors"]) for q in records)
