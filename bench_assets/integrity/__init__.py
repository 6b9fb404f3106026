"""Integrity: what makes the benchmark trustworthy rather than gameable (methodology § 03).

Holdout custody and commitments, decoys, dead-row replacement, rotation, the snapshot lifecycle
(draft → frozen → published) with errata versions, the vendor-review gate, headline eligibility
and the exclusions ledger. Plain functions, testable without Dagster; the assets that use them
are in `bench_assets.defs.integrity`.
"""
