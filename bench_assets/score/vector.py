"""hit@k over many result rows at once: URL normalization in DuckDB and matching on arrays, not a Python loop.

`metrics.normalize_url` and `metrics.hit_at_k` define the contract, one URL and one ranked list at
a time. This module computes exactly the same thing for a whole table of (query, rank, url) rows:

1. Each URL is normalized. URLs of the common shape (http or https, an ASCII
   host name, an optional numeric port, a path and query of characters that need no
   percent-encoding, no `.` or `..` segments, no `%` escapes; any fragment) are normalized by a
   SQL expression that performs the steps of `normalize_url` for that shape: host lower-cased,
   leading `www.` labels removed, default port dropped, trailing slashes removed, empty and
   `utm_*` parameters dropped and the rest sorted, fragment dropped. Every other URL is
   normalized by `normalize_url` itself, each distinct one once, so the two never disagree on
   anything unusual.
2. Each distinct form gets its match key (`metrics.identity.match_key`): the registry document it
   names under the published identity rules (an RFC number, an arXiv identifier, ...), else the form
   itself. Only forms on a host some rule reads can name a document, so only those are read in Python.
3. hit@k is a join of the results' match keys with the golden match keys on (query, key), grouped by
   query: the first hit's rank is the smallest matching rank.

`score_result_lists`, what scoring runs on a partition's result lists held in memory, normalizes
each distinct URL once (step 1), keys each distinct form once (step 2) and does the join of step 3
on integer codes of queries and keys with numpy and pandas; `first_hit_ranks` does the steps in SQL
for tables held in DuckDB.
`bench_assets_tests/unit/test_vector_scoring.py` checks agreement with `normalize_url` and `hit_at_k`
on random data, including adversarial URLs; `test_vector_scoring_paths.py` that the two give
identical frames.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import duckdb
import numpy as np
import pandas as pd

from bench_assets.metrics import normalize_url
from bench_assets.metrics.identity import identity_hosts, match_key

__all__ = [
    "SIMPLE_URL",
    "first_hit_ranks",
    "hit_at_k_frame",
    "hit_rates",
    "match_keys_table",
    "normalize_distinct_urls",
    "normalize_url_column",
    "score_result_lists",
]

# The shape the SQL path normalizes; anything else goes to normalize_url. Groups: host, port,
# path, query. Characters allowed raw are those normalize_url keeps raw (no '%').
SIMPLE_URL = (
    r"^[Hh][Tt][Tt][Pp][Ss]?://([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)(?::([0-9]{1,5}))?"
    r"(/[A-Za-z0-9._~!$&'()*+,;=:@/-]*)?(?:\?([A-Za-z0-9._~!$&'()*+,;=:@/?-]*))?(?:#.*)?$"
)


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _forms_sql(source: str, keep: Sequence[str] = ()) -> str:
    """SELECT <keep>, url, form FROM source: the normalized form by SQL for the simple shape, NULL
    where normalize_url must decide (a URL that does not match: the host group is then empty; a
    path with a '.' or '..' segment; a host whose www. labels leave no dot, where normalize_url keeps
    the last one: "www.www.com" -> "www.com"), and '' for a null URL (it never matches)."""
    cols = "".join(f"{c}, " for c in keep)
    return f"""
    WITH parts AS (
        SELECT {cols}url, regexp_extract(url, {_sql_text(SIMPLE_URL)}, ['host', 'port', 'path', 'query']) AS p
        FROM {source}
    ), shaped AS (
        SELECT {cols}url, lower(p.host) AS given_host, p.port AS port, p.path AS path, p.query AS query FROM parts
    ), stripped AS (
        SELECT *, CASE WHEN starts_with(given_host, 'www.') THEN regexp_replace(given_host, '^(www\\.)+', '')
                       ELSE given_host END AS host
        FROM shaped
    )
    SELECT {cols}url,
           CASE WHEN url IS NULL THEN ''
                WHEN host = '' OR (contains(path, '/.') AND regexp_matches(path, '(^|/)\\.\\.?(/|$)'))
                     OR (NOT contains(host, '.') AND starts_with(given_host, 'www.')) THEN NULL
                ELSE host
                     || CASE WHEN port = '' OR CAST(port AS INTEGER) IN (80, 443) THEN ''
                             ELSE ':' || CAST(CAST(port AS INTEGER) AS VARCHAR) END
                     || rtrim(path, '/')
                     || CASE WHEN query = '' THEN '' ELSE coalesce('?' || nullif(array_to_string(list_sort(
                            list_filter(string_split(query, '&'),
                                        x -> x <> '' AND NOT starts_with(lower(split_part(x, '=', 1)), 'utm_'))),
                            '&'), ''), '') END
           END AS form
    FROM stripped
    """


def normalize_url_column(con: duckdb.DuckDBPyConnection, source: str, target: str, keep: Sequence[str] = ()) -> dict:
    """Create table `target(<keep>, url, form)` from the relation `source` (a table name or a
    parenthesized query with a column `url`): `form` is `normalize_url(url)` for every row ('' for a
    null URL). The SQL path normalizes row by row; the rest are normalized by `normalize_url`, each
    distinct URL once. Returns counts: rows, and distinct URLs normalized in Python."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE {target} AS {_forms_sql(source, keep)}")
    rest = con.execute(f"SELECT DISTINCT url FROM {target} WHERE form IS NULL").fetchnumpy()["url"]
    if len(rest):
        con.register("_slow_forms", pd.DataFrame({"url": rest, "form": [normalize_url(u) for u in rest]}))
        con.execute(
            f"UPDATE {target} SET form = s.form FROM _slow_forms s WHERE {target}.form IS NULL AND {target}.url = s.url"
        )
        con.unregister("_slow_forms")
    counted = con.execute(f"SELECT count(*) FROM {target}").fetchone()
    assert counted is not None  # count(*) always returns one row
    return {"rows": int(counted[0]), "normalized_in_python": len(rest)}


def normalize_distinct_urls(con: duckdb.DuckDBPyConnection, source: str, target: str = "url_forms") -> dict:
    """Create table `target(url, form)` with the normalized form of every distinct non-null `url`
    of the relation `source`. Returns counts: distinct URLs, and how many went through Python."""
    counts = normalize_url_column(con, f"(SELECT DISTINCT url FROM {source} WHERE url IS NOT NULL)", target)
    return {"distinct_urls": counts["rows"], "normalized_in_python": counts["normalized_in_python"]}


def match_keys_table(con: duckdb.DuckDBPyConnection, tables: Sequence[str], target: str = "_match_keys") -> int:
    """Create table `target(form, match)`: every distinct form of the `tables` (each with a column
    `form`) that names a registry document, with its match key (`metrics.identity.match_key`).
    Only forms on a host an identity rule reads go through Python; a form not in `target` is its
    own key. Returns how many forms were read."""
    hosts = ", ".join(_sql_text(h) for h in sorted(identity_hosts()))
    union = " UNION ".join(f"SELECT form FROM {t}" for t in tables)
    candidates = con.execute(
        f"SELECT DISTINCT form FROM ({union}) WHERE regexp_extract(form, '^[^/?]*') IN ({hosts})"
    ).fetchnumpy()["form"]
    keyed = [(form, match_key(form)) for form in candidates.tolist()]
    con.register("_keyed_df", pd.DataFrame([k for k in keyed if k[1] != k[0]], columns=["form", "match"]))
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {target} AS SELECT CAST(form AS VARCHAR) AS form, "
        "CAST(match AS VARCHAR) AS match FROM _keyed_df"
    )
    con.unregister("_keyed_df")
    return len(candidates)


def first_hit_ranks(
    con: duckdb.DuckDBPyConnection, results: str, golden: str, forms_table: str | None = None, keep: Sequence[str] = ()
) -> pd.DataFrame:
    """Per golden query: the rank of its first result naming a golden URL's document (None when
    none does): equal normalized forms, or the same registry document (`match_keys_table`).

    `results` has columns (query_id, rank, url) with rank the 1-based position in the vendor's
    list (a null or unmatchable url still occupies its rank); `golden` has (query_id, url), one
    row per golden URL, both query_id columns of one type (cast them: an empty pandas column
    reaches DuckDB as an integer). Every query of `golden` gets a row. With `forms_table`, the table
    `forms_table(query_id, rank, <keep>, url, form)` of every result row's normalized URL is kept
    on `con`.
    """
    result_forms = forms_table or "_result_forms"
    normalize_url_column(con, results, result_forms, keep=("query_id", "rank", *keep))
    normalize_url_column(con, golden, "_golden_forms", keep=("query_id",))
    match_keys_table(con, (result_forms, "_golden_forms"))
    frame = con.execute(f"""
        WITH golden_keys AS (
            SELECT DISTINCT g.query_id, coalesce(k.match, g.form) AS match
            FROM _golden_forms g LEFT JOIN _match_keys k USING (form) WHERE g.form <> ''
        ),
        result_keys AS (
            SELECT r.query_id, r.rank, coalesce(k.match, r.form) AS match
            FROM {result_forms} r LEFT JOIN _match_keys k USING (form)
        ),
        hits AS (
            SELECT r.query_id, min(r.rank) AS first_hit_rank
            FROM result_keys r JOIN golden_keys g ON g.query_id = r.query_id AND g.match = r.match
            GROUP BY r.query_id
        )
        SELECT q.query_id, h.first_hit_rank
        FROM (SELECT DISTINCT query_id FROM _golden_forms) q LEFT JOIN hits h USING (query_id)
        ORDER BY q.query_id
    """).df()
    if forms_table is None:
        con.execute(f"DROP TABLE {result_forms}")
    con.execute("DROP TABLE _golden_forms")
    con.execute("DROP TABLE _match_keys")
    return frame.astype({"first_hit_rank": "Int64"})


def hit_at_k_frame(
    con: duckdb.DuckDBPyConnection,
    results: str,
    golden: str,
    ks: Iterable[int] = (1, 3, 5, 10),
    forms_table: str | None = None,
    keep: Sequence[str] = (),
) -> pd.DataFrame:
    """Per golden query: first_hit_rank and hit_at_<k> (bool) for each k, as `metrics.hit_at_k` gives them.
    `forms_table` and `keep` keep the results' normalized URLs (see `first_hit_ranks`)."""
    ks = list(ks)
    for k in ks:
        if isinstance(k, bool) or int(k) != k or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
    frame = first_hit_ranks(con, results, golden, forms_table, keep)
    for k in ks:
        frame[f"hit_at_{k}"] = (frame["first_hit_rank"] <= k).fillna(False).astype(bool)
    return frame


# Below this many result rows the in-memory work is done by one DuckDB thread: a partition's results
# take less CPU on one thread than on one per core, in no more wall time (figures in
# benchmarks/README.md), and other partitions' processes run beside it; larger inputs
# (`benchmarks/scoring_bench.py`'s million rows) keep DuckDB's default.
SINGLE_THREAD_ROWS = 500_000


def score_result_lists(
    results: pd.DataFrame, golden: pd.DataFrame, ks: Sequence[int] = (1, 3, 5, 10)
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """hit@k and URL normalization for ranked result lists held in memory: what scoring runs.

    `results` has (query_id, rank, url), one row per returned result with rank its 1-based
    position; `golden` has (query_id, url), one row per golden URL of each query scored. Returns
    `(hits, forms)`: `hits` has one row per query of `golden` (query_id, first_hit_rank,
    hit_at_<k>), ordered by query_id; `forms` one row per result (query_id, rank, url_normalized),
    in the order and with the index of `results`.

    Each distinct URL (results and golden together) is normalized once, in an in-memory DuckDB
    connection (`normalize_url_column`), and every row takes its URL's form; each distinct form
    gets its match key once (`metrics.identity.match_key`: the registry document it names, else
    the form); a result is a hit when its key is one of its query's golden keys (a null URL, form
    '', never is), and the first hit's rank is the smallest such rank: the join `first_hit_ranks`
    does, on integer codes.
    Query ids that are not all texts, or URLs that are neither texts nor None, go to DuckDB whole
    (`first_hit_ranks`), which casts them as it casts any value.
    """
    ks = _checked_ks(ks)
    query_ids, urls = results["query_id"].astype("object"), results["url"].astype("object")
    golden_ids, golden_urls = golden["query_id"].astype("object"), golden["url"].astype("object")
    if not (_all_texts(query_ids) and _all_texts(golden_ids) and _texts_or_none(urls) and _texts_or_none(golden_urls)):
        return _score_result_lists_in_sql(results, golden, ks)
    ranks = results["rank"].astype("int64").to_numpy()
    forms, keys = _forms_of_distinct(pd.concat([urls, golden_urls], ignore_index=True), len(results))
    result_forms, golden_forms = forms[: len(results)], forms[len(results) :]
    # Queries and match keys as integer codes (the same registry document, one code); a (query,
    # key) pair is one integer.
    query_codes, query_index = pd.factorize(pd.concat([query_ids, golden_ids], ignore_index=True))
    query_names = query_index.tolist()
    # A dict, not pd.factorize: pandas hashes object strings as C strings, so '' and '\x00' (or 'a'
    # and 'a\x00b') would share a code and a result '' would hit a golden '\x00'.
    codes_of: dict[str, int] = {}
    key_codes = np.fromiter((codes_of.setdefault(k, len(codes_of)) for k in keys), dtype=np.int64, count=len(keys))
    key_names = list(codes_of)
    pair = query_codes.astype("int64") * max(1, len(key_names)) + key_codes
    golden_pairs = np.unique(pair[len(results) :][golden_forms != ""])
    hit = np.isin(pair[: len(results)], golden_pairs)
    first_rank = pd.Series(ranks[hit]).groupby(query_codes[: len(results)][hit]).min().to_dict()
    golden_queries = sorted(set(query_codes[len(results) :].tolist()), key=lambda code: query_names[code])
    hits = pd.DataFrame(
        {
            "query_id": np.array([query_names[code] for code in golden_queries], dtype="object"),
            "first_hit_rank": pd.array([first_rank.get(code) for code in golden_queries], dtype="Int64"),
        }
    )
    for k in ks:
        hits[f"hit_at_{k}"] = (hits["first_hit_rank"] <= k).fillna(False).astype(bool)
    normalized = pd.DataFrame(
        {"query_id": query_ids.to_numpy(), "rank": ranks, "url_normalized": result_forms}, index=results.index
    )
    return hits, normalized


def _checked_ks(ks: Iterable[int]) -> list[int]:
    ks = list(ks)
    for k in ks:
        if isinstance(k, bool) or int(k) != k or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
    return ks


def _all_texts(values: pd.Series) -> bool:
    return set(map(type, values)) <= {str}


def _texts_or_none(values: pd.Series) -> bool:
    return set(map(type, values)) <= {str, type(None)}


def _forms_of_distinct(urls: pd.Series, result_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """`normalize_url` of every URL ('' for None), each distinct URL normalized once in DuckDB
    (`normalize_url_column`: the SQL path, or `normalize_url` for the rest), and each one's match
    key (`metrics.identity.match_key`), read in Python only for forms on a host an identity rule
    reads (the rest are their own key)."""
    codes, distinct = pd.factorize(urls)
    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")
        if result_rows < SINGLE_THREAD_ROWS:
            con.execute("SET threads = 1")
        given = pd.DataFrame({"url": np.asarray(distinct, dtype="object"), "pos": np.arange(len(distinct))})
        con.register("_distinct_df", given)
        con.execute("CREATE TEMP VIEW _distinct AS SELECT CAST(url AS VARCHAR) AS url, pos FROM _distinct_df")
        normalize_url_column(con, "_distinct", "_distinct_forms", keep=("pos",))
        hosts = ", ".join(_sql_text(h) for h in sorted(identity_hosts()))
        found = con.execute(
            f"SELECT form, regexp_extract(form, '^[^/?]*') IN ({hosts}) AS keyed FROM _distinct_forms ORDER BY pos"
        ).fetchnumpy()
    finally:
        con.close()
    distinct_forms = np.asarray(found["form"], dtype="object")
    distinct_keys = distinct_forms.copy()
    for i in np.flatnonzero(np.asarray(found["keyed"], dtype=bool)).tolist():
        distinct_keys[i] = match_key(distinct_forms[i])
    forms, keys = np.empty(len(urls), dtype="object"), np.empty(len(urls), dtype="object")
    forms[:], keys[:] = "", ""
    known = codes >= 0
    forms[known], keys[known] = distinct_forms[codes[known]], distinct_keys[codes[known]]
    return forms, keys


def _score_result_lists_in_sql(
    results: pd.DataFrame, golden: pd.DataFrame, ks: Sequence[int]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`score_result_lists` with every row in DuckDB, for ids and URLs of any type (DuckDB casts them)."""
    given = pd.DataFrame(
        {
            "query_id": results["query_id"].astype("object"),
            "rank": results["rank"].astype("int64"),
            "url": results["url"].astype("object"),
            "pos": np.arange(len(results), dtype="int64"),
        }
    )
    golden = pd.DataFrame({"query_id": golden["query_id"].astype("object"), "url": golden["url"].astype("object")})
    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")
        if len(given) < SINGLE_THREAD_ROWS:
            con.execute("SET threads = 1")
        con.register("_results_df", given)
        con.register("_golden_df", golden)
        # Explicit column types: an empty or all-null pandas column would otherwise reach DuckDB untyped.
        con.execute(
            "CREATE TEMP VIEW _results AS SELECT CAST(query_id AS VARCHAR) AS query_id, "
            "CAST(rank AS BIGINT) AS rank, CAST(url AS VARCHAR) AS url, pos FROM _results_df"
        )
        con.execute(
            "CREATE TEMP VIEW _golden AS SELECT CAST(query_id AS VARCHAR) AS query_id, "
            "CAST(url AS VARCHAR) AS url FROM _golden_df"
        )
        hits = hit_at_k_frame(con, "_results", "_golden", ks, forms_table="_forms", keep=("pos",))
        normalized = con.execute("SELECT form FROM _forms ORDER BY pos").fetchnumpy()["form"]
    finally:
        con.close()
    forms = pd.DataFrame(
        {
            "query_id": given["query_id"].to_numpy(),
            "rank": given["rank"].to_numpy(),
            "url_normalized": np.asarray(normalized, dtype="object"),
        },
        index=results.index,
    )
    return hits, forms


def hit_rates(con: duckdb.DuckDBPyConnection, results: str, golden: str, ks: Sequence[int] = (1, 3, 5, 10)) -> dict:
    """hit@k for each k: the share of golden queries with a hit in the top k."""
    frame = hit_at_k_frame(con, results, golden, ks)
    return {k: float(frame[f"hit_at_{k}"].mean()) if len(frame) else float("nan") for k in ks}
