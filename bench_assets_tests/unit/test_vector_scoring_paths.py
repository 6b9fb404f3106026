"""`score_result_lists` gives exactly what it gave when every row went through DuckDB.

It now normalizes each distinct URL once and matches results with golden URLs on integer codes;
`_score_result_lists_in_sql` is the former path (every row normalized and joined in DuckDB), kept
for ids and URLs that are not plain texts. Both must return identical frames: same values, same
dtypes, same order, same index.
"""

from __future__ import annotations

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench_assets.score.vector import _score_result_lists_in_sql, score_result_lists
from bench_assets_tests.unit.test_vector_scoring import urls

golden_url = st.one_of(
    urls, st.sampled_from(["https://a.test/x", "http://www.a.test/x/", "https://b.test/y?utm_source=z"])
)
result_url = st.one_of(golden_url, st.none())
query_ids = st.sampled_from(["q1", "q2", "q10", "Q2", "q\u00e9", "q 3", ""])


def assert_same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b, check_exact=True, check_index_type=True, check_column_type=True)
    assert a.dtypes.tolist() == b.dtypes.tolist()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(query_ids, st.integers(-3, 40), result_url), max_size=40),
    st.lists(st.tuples(query_ids, st.one_of(golden_url, st.none())), max_size=12),
    st.sampled_from([(1, 3, 5, 10), (1,), (2, 7)]),
    st.booleans(),
)
def test_both_paths_give_the_same_frames(result_rows, golden_rows, ks, shuffled_index):
    results = pd.DataFrame(result_rows, columns=["query_id", "rank", "url"])
    if shuffled_index:
        results.index = list(range(len(results)))[::-1]
    golden = pd.DataFrame(golden_rows, columns=["query_id", "url"])
    fast_hits, fast_forms = score_result_lists(results, golden, ks)
    sql_hits, sql_forms = _score_result_lists_in_sql(results, golden, ks)
    assert_same(fast_hits, sql_hits)
    assert_same(fast_forms, sql_forms)


def test_ids_and_urls_that_are_not_texts_go_to_duckdb_whole():
    results = pd.DataFrame({"query_id": ["q1", "q1"], "rank": [1, 2], "url": [5, "https://a.test/5"]})
    golden = pd.DataFrame({"query_id": ["q1"], "url": ["https://a.test/5"]})
    hits, forms = score_result_lists(results, golden)
    sql_hits, sql_forms = _score_result_lists_in_sql(results, golden, (1, 3, 5, 10))
    assert_same(hits, sql_hits)
    assert_same(forms, sql_forms)
    assert int(hits["first_hit_rank"][0]) == 2
