"""Kept for checks outside the test suite (DESIGN.md, "Kept stable"): the vectorised hit@k scorer
lives in `bench_assets.score.vector`."""

from bench_assets.score.vector import hit_rates, score_result_lists

__all__ = ["hit_rates", "score_result_lists"]
