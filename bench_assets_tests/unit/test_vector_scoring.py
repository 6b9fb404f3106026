"""The vectorized hit@k path agrees exactly with `metrics.normalize_url` and `metrics.hit_at_k`.

URLs are built from pieces chosen to sit on both sides of the SQL path's boundary (schemes,
case, www labels, ports with leading zeros, dot segments, escapes, utm and empty parameters,
fragments, whitespace, non-ASCII), plus arbitrary text; result lists mix matching spellings,
duplicates, nulls and garbage.
"""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bench_assets.metrics import first_hit_rank, hit_at_k, normalize_url
from bench_assets.score.vector import hit_at_k_frame, hit_rates, normalize_distinct_urls, score_result_lists

schemes = st.sampled_from(["https://", "http://", "HTTPS://", "Http://", "ftp://", "", "//", "mailto:", " https://"])
hosts = st.sampled_from(
    [
        "example.com",
        "Example.COM",
        "www.example.com",
        "WWW.www.example.com",
        "www.com",
        "www.www.com",
        "a_b.test",
        "localhost",
        "127.0.0.1",
        "tel",
        "b\u00fccher.de",
        "ex ample.com",
        "user:pw@example.com",
        "[::1]",
        "example.com.",
    ]
)
ports = st.sampled_from(["", ":80", ":443", ":0080", ":8080", ":00000", ":", ":x", ":99999"])
segment = st.sampled_from(
    ["a", "B", ".", "..", "", "x-y_z~", "%7e", "%2f", "%41", "%zz", "\u00e9", " ", "a:b@c", "!$&'()*+,;=", "index.html"]
)
paths = st.lists(segment, max_size=4).map(lambda parts: "".join("/" + p for p in parts))
param = st.sampled_from(
    ["a=1", "b=2", "A=1", "utm_source=x", "UTM_Medium=y", "utm_", "", "q=a+b", "q=a%20b", "k", "x=?y", "=v", "z=\u00e9"]
)
queries = st.one_of(st.just(""), st.lists(param, max_size=4).map(lambda ps: "?" + "&".join(ps)))
fragments = st.sampled_from(["", "#", "#frag", "#a b", "#x\ny", " ", "\n", "#f "])
urls = st.one_of(
    st.builds(lambda s, h, p, pa, q, f: s + h + p + pa + q + f, schemes, hosts, ports, paths, queries, fragments),
    st.text(max_size=30),
)


def vector_forms(values: list[str]) -> dict[str, str]:
    con = duckdb.connect()
    con.register("given", pd.DataFrame({"url": pd.Series(values, dtype="object")}))
    normalize_distinct_urls(con, "given")
    return dict(con.execute("SELECT url, form FROM url_forms").fetchall())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(urls, min_size=1, max_size=40))
def test_normalization_agrees_with_normalize_url(values):
    forms = vector_forms(values)
    for url in values:
        assert forms[url] == normalize_url(url), url


def test_the_common_shapes_take_the_sql_path_and_the_rest_do_not():
    con = duckdb.connect()
    given = [
        "https://www.a.com/x/?utm_source=v&b=1",
        "http://a.com:8080/y",
        "https://a.com/%7e",
        "https://a.com/./x",
        "http://www.www.com/x",
        "ftp://a.com/x",
        "https://a.com/\u00e9",
    ]
    con.register("given", pd.DataFrame({"url": given}))
    counts = normalize_distinct_urls(con, "given")
    assert counts == {"distinct_urls": 7, "normalized_in_python": 5}


# Registry URL forms of a few documents, the same documents under other spellings, and near misses
# (another document of the same registry, a form no rule reads): identity rules apply on both paths.
registry_urls = st.sampled_from(
    [
        "https://www.rfc-editor.org/rfc/rfc9110",
        "https://www.rfc-editor.org/rfc/rfc9110.html",
        "http://rfc-editor.org/info/rfc9110/",
        "https://datatracker.ietf.org/doc/html/rfc9110",
        "https://datatracker.ietf.org/doc/rfc9110/",
        "https://doi.org/10.17487/RFC9110",
        "https://www.ietf.org/rfc/rfc9110.txt",
        "https://www.rfc-editor.org/rfc/rfc9111",
        "https://www.rfc-editor.org/rfc/rfc91100",
        "https://datatracker.ietf.org/doc/draft-ietf-httpbis-semantics/",
        "https://arxiv.org/abs/2106.09685",
        "https://arxiv.org/pdf/2106.09685v2",
        "https://export.arxiv.org/abs/2106.09685v1?utm_source=x",
        "https://arxiv.org/abs/2106.09686",
        "https://arxiv.org/html/2106.09685v1/x1.png",
        "https://peps.python.org/pep-0008/",
        "https://www.python.org/dev/peps/pep-0008/",
        "https://peps.python.org/pep-0080/",
        "https://www.federalregister.gov/d/2020-28567",
        "https://www.govinfo.gov/content/pkg/FR-2020-12-31/pdf/2020-28567.pdf",
        "https://www.govinfo.gov/content/pkg/FR-2020-12-31/pdf/FR-2020-12-31.pdf",
        "https://www.sec.gov/ix?doc=/Archives/edgar/data/1318605/000095017022019867/tsla-20220930.htm",
        "https://www.sec.gov/Archives/edgar/data/1318605/000095017022019867/0000950170-22-019867-index.htm",
        "https://www.sec.gov/Archives/edgar/data/1318605/000095017022012936/tsla-20220630.htm",
        "https://www.sec.gov/ix?doc=/Archives/edgar/data/1318605/000095017022019867",
    ]
)
result_url = st.one_of(
    urls,
    st.none(),
    registry_urls,
    st.sampled_from(
        ["https://www.example.com/a/", "http://example.com/a?utm_x=1", "example.com/a#top", "https://example.com/b"]
    ),
)
golden_url = st.one_of(
    urls, registry_urls, st.sampled_from(["https://example.com/a", "https://example.com/b", "", "not a url"])
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.lists(golden_url, min_size=1, max_size=3), st.lists(result_url, max_size=12)),
        min_size=1,
        max_size=12,
    )
)
@example([(["https://www.rfc-editor.org/rfc/rfc9110"], [])])  # no result at all: an empty results table
def test_hit_at_k_agrees_with_the_metric(queries):
    golden = pd.DataFrame([{"query_id": f"q{i:02d}", "url": g} for i, (gs, _) in enumerate(queries) for g in gs])
    results = pd.DataFrame(
        [
            {"query_id": f"q{i:02d}", "rank": r, "url": u}
            for i, (_, rs) in enumerate(queries)
            for r, u in enumerate(rs, start=1)
        ],
        columns=["query_id", "rank", "url"],
    ).astype({"rank": "int64", "url": "object"})
    con = duckdb.connect()
    # Typed as the pipeline types them (`_score_result_lists_in_sql`): an empty pandas column of
    # objects would reach DuckDB as an integer column.
    con.register("results_df", results)
    con.register("golden_df", golden)
    con.execute(
        "CREATE VIEW results AS SELECT CAST(query_id AS VARCHAR) AS query_id, rank, "
        "CAST(url AS VARCHAR) AS url FROM results_df"
    )
    con.execute("CREATE VIEW golden AS SELECT CAST(query_id AS VARCHAR) AS query_id, url FROM golden_df")
    frame = hit_at_k_frame(con, "results", "golden", ks=(1, 3, 10)).set_index("query_id")
    assert list(frame.index) == sorted(f"q{i:02d}" for i in range(len(queries)))
    for i, (gs, rs) in enumerate(queries):
        row = frame.loc[f"q{i:02d}"]
        expected_rank = first_hit_rank(gs, rs)
        assert (None if pd.isna(row["first_hit_rank"]) else int(row["first_hit_rank"])) == expected_rank
        for k in (1, 3, 10):
            assert bool(row[f"hit_at_{k}"]) == hit_at_k(gs, rs, k)


def test_hit_rates_are_the_share_of_queries_with_a_hit():
    con = duckdb.connect()
    con.register(
        "golden",
        pd.DataFrame(
            {"query_id": ["a", "b", "c", "d"], "url": ["https://x.test/1", "https://x.test/2", "https://x.test/3", ""]}
        ),
    )
    con.register(
        "results",
        pd.DataFrame(
            {
                "query_id": ["a", "a", "b", "b", "b", "d"],
                "rank": [1, 2, 1, 2, 3, 1],
                "url": [
                    "http://www.x.test/1/",
                    "https://x.test/9",
                    "https://x.test/9",
                    None,
                    "https://x.test/2?utm_source=v",
                    "",
                ],
            }
        ),
    )
    assert hit_rates(con, "results", "golden", ks=(1, 3)) == {1: 0.25, 3: 0.5}
    with pytest.raises(ValueError):
        hit_at_k_frame(con, "results", "golden", ks=(0,))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.lists(golden_url, min_size=1, max_size=3), st.lists(result_url, max_size=12)),
        min_size=1,
        max_size=12,
    )
)
@example([([""], ["https://example.com", None]), (["\x00"], [""])])  # pandas hashes '\x00' as ''
def test_the_pipeline_entry_point_agrees_with_the_metric(queries):
    """`score_result_lists` (what `scoring.score_partition` calls) gives `first_hit_rank`/`hit_at_k`
    per query and `normalize_url` per result, in the order of the results."""
    golden = pd.DataFrame([{"query_id": f"q{i:02d}", "url": g} for i, (gs, _) in enumerate(queries) for g in gs])
    results = pd.DataFrame(
        [
            {"query_id": f"q{i:02d}", "rank": r, "url": u}
            for i, (_, rs) in enumerate(queries)
            for r, u in enumerate(rs, start=1)
        ],
        columns=["query_id", "rank", "url"],
    )
    hits, forms = score_result_lists(results, golden, ks=(1, 5))
    by_query = hits.set_index("query_id")
    for i, (gs, rs) in enumerate(queries):
        row = by_query.loc[f"q{i:02d}"]
        assert (None if pd.isna(row["first_hit_rank"]) else int(row["first_hit_rank"])) == first_hit_rank(gs, rs)
        assert bool(row["hit_at_5"]) == hit_at_k(gs, rs, 5)
    assert forms[["query_id", "rank"]].values.tolist() == results[["query_id", "rank"]].values.tolist()
    assert forms["url_normalized"].tolist() == [normalize_url(u) if isinstance(u, str) else "" for u in results["url"]]


def test_both_paths_apply_the_identity_rules():
    """A registry's other URL forms of the golden document hit on both paths, at the same rank as
    `metrics.first_hit_rank` gives; another document of the same registry never does."""
    golden = pd.DataFrame(
        {
            "query_id": ["rfc", "arxiv", "edgar", "miss"],
            "url": [
                "https://www.rfc-editor.org/rfc/rfc9110",
                "https://arxiv.org/abs/2106.09685",
                "https://www.sec.gov/Archives/edgar/data/1318605/000095017022019867/tsla-20220930.htm",
                "https://www.rfc-editor.org/rfc/rfc9110",
            ],
        }
    )
    lists = {
        "rfc": ["https://www.rfc-editor.org/rfc/rfc9111", "https://datatracker.ietf.org/doc/html/rfc9110"],
        "arxiv": ["https://arxiv.org/pdf/2106.09685v3.pdf"],
        "edgar": [
            "https://www.sec.gov/Archives/edgar/data/1318605/000095017022012936/tsla-20220630.htm",
            "https://www.sec.gov/Archives/edgar/data/1318605/0000950170-22-019867.txt",
        ],
        "miss": ["https://www.rfc-editor.org/rfc/rfc91100", "https://www.rfc-editor.org/rfc/rfc9111.html"],
    }
    results = pd.DataFrame(
        [{"query_id": q, "rank": r, "url": u} for q, us in lists.items() for r, u in enumerate(us, start=1)]
    )
    con = duckdb.connect()
    con.register("results", results)
    con.register("golden", golden)
    in_sql = hit_at_k_frame(con, "results", "golden", ks=(1, 2)).set_index("query_id")["first_hit_rank"]
    in_memory = score_result_lists(results, golden, ks=(1, 2))[0].set_index("query_id")["first_hit_rank"]
    expected = {"rfc": 2, "arxiv": 1, "edgar": 2, "miss": None}
    for query, rank in expected.items():
        assert first_hit_rank(golden.set_index("query_id").loc[[query], "url"].tolist(), lists[query]) == rank
        for got in (in_sql[query], in_memory[query]):
            assert (None if pd.isna(got) else int(got)) == rank, (query, got)


def test_the_pipeline_entry_point_takes_empty_and_all_null_lists():
    hits, forms = score_result_lists(
        pd.DataFrame(columns=["query_id", "rank", "url"]),
        pd.DataFrame({"query_id": ["a"], "url": ["https://x.test/1"]}),
    )
    assert hits["query_id"].tolist() == ["a"] and pd.isna(hits["first_hit_rank"][0]) and not hits["hit_at_10"][0]
    assert forms.empty
    hits, forms = score_result_lists(
        pd.DataFrame({"query_id": ["a"], "rank": [1], "url": [None]}), pd.DataFrame(columns=["query_id", "url"])
    )
    assert hits.empty and forms["url_normalized"].tolist() == [""]
