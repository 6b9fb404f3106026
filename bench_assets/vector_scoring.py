"""hit@k over many result rows at once: URL normalization and matching in DuckDB, not a Python loop.

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
2. hit@k is a join of the results' normalized forms with the golden forms on (query, form),
   grouped by query: the first hit's rank is the smallest matching rank.

`bench_assets_tests/test_vector_scoring.py` checks agreement with `normalize_url` and `hit_at_k`
on random data, including adversarial URLs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import duckdb
import pandas as pd

from bench_assets.metrics import normalize_url

__all__ = ["SIMPLE_URL", "first_hit_ranks", "hit_at_k_frame", "hit_rates", "normalize_distinct_urls",
           "normalize_url_column"]

# The shape the SQL path normalizes; anything else goes to normalize_url. Groups: host, port,
# path, query. Characters allowed raw are those normalize_url keeps raw (no '%').
SIMPLE_URL = (r"^[Hh][Tt][Tt][Pp][Ss]?://([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)(?::([0-9]{1,5}))?"
              r"(/[A-Za-z0-9._~!$&'()*+,;=:@/-]*)?(?:\?([A-Za-z0-9._~!$&'()*+,;=:@/?-]*))?(?:#.*)?$")


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


def normalize_url_column(con: duckdb.DuckDBPyConnection, source: str, target: str,
                         keep: Sequence[str] = ()) -> dict:
    """Create table `target(<keep>, url, form)` from the relation `source` (a table name or a
    parenthesized query with a column `url`): `form` is `normalize_url(url)` for every row ('' for a
    null URL). The SQL path normalizes row by row; the rest are normalized by `normalize_url`, each
    distinct URL once. Returns counts: rows, and distinct URLs normalized in Python."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE {target} AS {_forms_sql(source, keep)}")
    rest = con.execute(f"SELECT DISTINCT url FROM {target} WHERE form IS NULL").fetchnumpy()["url"]
    if len(rest):
        con.register("_slow_forms", pd.DataFrame({"url": rest, "form": [normalize_url(u) for u in rest]}))
        con.execute(f"UPDATE {target} SET form = s.form FROM _slow_forms s "
                    f"WHERE {target}.form IS NULL AND {target}.url = s.url")
        con.unregister("_slow_forms")
    rows = con.execute(f"SELECT count(*) FROM {target}").fetchone()[0]
    return {"rows": int(rows), "normalized_in_python": int(len(rest))}


def normalize_distinct_urls(con: duckdb.DuckDBPyConnection, source: str, target: str = "url_forms") -> dict:
    """Create table `target(url, form)` with the normalized form of every distinct non-null `url`
    of the relation `source`. Returns counts: distinct URLs, and how many went through Python."""
    counts = normalize_url_column(con, f"(SELECT DISTINCT url FROM {source} WHERE url IS NOT NULL)", target)
    return {"distinct_urls": counts["rows"], "normalized_in_python": counts["normalized_in_python"]}


def first_hit_ranks(con: duckdb.DuckDBPyConnection, results: str, golden: str) -> pd.DataFrame:
    """Per golden query: the rank of its first result matching a golden URL (None when none does).

    `results` has columns (query_id, rank, url) with rank the 1-based position in the vendor's
    list (a null or unmatchable url still occupies its rank); `golden` has (query_id, url), one
    row per golden URL. Every query of `golden` gets a row.
    """
    normalize_url_column(con, results, "_result_forms", keep=("query_id", "rank"))
    normalize_url_column(con, golden, "_golden_forms", keep=("query_id",))
    frame = con.execute("""
        WITH golden_forms AS (SELECT DISTINCT query_id, form FROM _golden_forms WHERE form <> ''),
        hits AS (
            SELECT r.query_id, min(r.rank) AS first_hit_rank
            FROM _result_forms r JOIN golden_forms g ON g.query_id = r.query_id AND g.form = r.form
            GROUP BY r.query_id
        )
        SELECT q.query_id, h.first_hit_rank
        FROM (SELECT DISTINCT query_id FROM _golden_forms) q LEFT JOIN hits h USING (query_id)
        ORDER BY q.query_id
    """).df()
    con.execute("DROP TABLE _result_forms")
    con.execute("DROP TABLE _golden_forms")
    return frame.astype({"first_hit_rank": "Int64"})


def hit_at_k_frame(con: duckdb.DuckDBPyConnection, results: str, golden: str,
                   ks: Iterable[int] = (1, 3, 5, 10)) -> pd.DataFrame:
    """Per golden query: first_hit_rank and hit_at_<k> (bool) for each k, as `metrics.hit_at_k` gives them."""
    frame = first_hit_ranks(con, results, golden)
    for k in ks:
        if isinstance(k, bool) or int(k) != k or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        frame[f"hit_at_{k}"] = (frame["first_hit_rank"] <= k).fillna(False).astype(bool)
    return frame


def hit_rates(con: duckdb.DuckDBPyConnection, results: str, golden: str, ks: Sequence[int] = (1, 3, 5, 10)) -> dict:
    """hit@k for each k: the share of golden queries with a hit in the top k."""
    frame = hit_at_k_frame(con, results, golden, ks)
    return {k: float(frame[f"hit_at_{k}"].mean()) if len(frame) else float("nan") for k in ks}
