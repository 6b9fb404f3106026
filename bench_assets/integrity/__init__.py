"""Integrity: what makes the benchmark trustworthy rather than gameable (methodology § 03).

Holdout custody and commitments, the holdout-leak guard of publication, decoys, dead-row
replacement, rotation, the snapshot lifecycle (draft → frozen → published) with versions made
by errata and vendors' replies, the vendor-review gate, headline eligibility with the operator's
declaration, and the exclusions ledger. Plain functions, testable without Dagster; the assets
that use them are in `bench_assets.defs.integrity` and `bench_assets.defs.publication`.
"""
