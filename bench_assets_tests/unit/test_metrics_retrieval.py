"""hit@k and first-hit rank over normalized URLs."""

from __future__ import annotations

import numpy as np
import pytest

from bench_assets.metrics import first_hit_rank, hit_at_k

GOLDEN = "https://www.example.com/report/2026/?utm_source=feed#top"
RESULTS = [
    "https://other.org/a",
    "https://example.com/report/2025",
    "http://EXAMPLE.com/report/2026",  # the golden page, differently spelled
    "https://example.com/report/2026/",
]


def test_first_hit_rank_uses_normalized_urls_and_is_one_based() -> None:
    assert first_hit_rank(GOLDEN, RESULTS) == 3
    assert first_hit_rank([GOLDEN], RESULTS[2:]) == 1


@pytest.mark.parametrize(("k", "expected"), [(1, False), (2, False), (3, True), (10, True)])
def test_hit_at_k_boundary(k: int, expected: bool) -> None:
    assert hit_at_k(GOLDEN, RESULTS, k) is expected


def test_any_of_several_golden_urls_counts() -> None:
    golden = ["https://nowhere.example/x", "https://other.org/a/"]
    assert first_hit_rank(golden, RESULTS) == 1
    assert hit_at_k(golden, RESULTS, 1) is True


def test_duplicates_keep_their_slots_and_count_at_first_position() -> None:
    results = ["https://a.example/1", "https://a.example/1", "https://b.example/2", "https://b.example/2/"]
    # b.example/2 is the third slot: the duplicate of a.example/1 is not collapsed away.
    assert first_hit_rank("https://b.example/2", results) == 3
    assert hit_at_k("https://b.example/2", results, 2) is False
    assert hit_at_k("https://b.example/2", results, 3) is True


def test_no_match_and_empty_lists() -> None:
    assert first_hit_rank(GOLDEN, ["https://example.com/report/2026/extra"]) is None
    assert first_hit_rank(GOLDEN, []) is None
    assert hit_at_k(GOLDEN, [], 5) is False
    assert first_hit_rank([], RESULTS) is None


def test_empty_or_garbage_entries_never_match_each_other() -> None:
    # Both normalize to "", which must not count as a match.
    assert first_hit_rank("", ["", "https://"]) is None
    assert first_hit_rank([None, ""], [None, "", "https://"]) is None  # type: ignore[list-item]
    # ... but they still occupy their slot.
    assert first_hit_rank(GOLDEN, [None, "", GOLDEN]) == 3  # type: ignore[list-item]


def test_fewer_results_than_k() -> None:
    assert hit_at_k(GOLDEN, [GOLDEN], 10) is True


def test_accepts_generators_and_numpy_k() -> None:
    assert hit_at_k((url for url in [GOLDEN]), (url for url in RESULTS), np.int64(3)) is True


@pytest.mark.parametrize("bad_k", [0, -1, 1.5, "3", True, None])
def test_invalid_k_raises(bad_k) -> None:
    with pytest.raises(ValueError):
        hit_at_k(GOLDEN, RESULTS, bad_k)
