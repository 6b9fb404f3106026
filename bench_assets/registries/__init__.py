"""Registry adapters: one small transport-only module per registry of golden truth.

Each module builds the requests its registry documents and parses the records of the registry's
own published format (rfc-index.xml, peps.json, EDGAR JSON, arXiv Atom, Federal Register JSON).
It never decides truth: which facts a golden row asserts is `bench_assets.golden.registry_rows`.
"""

from __future__ import annotations

import importlib

from bench_assets.registries.base import Registry

REGISTRY_MODULES = ("sec_edgar", "rfc_editor", "peps", "arxiv", "federal_register")


def get_registry(name: str) -> Registry:
    if name not in REGISTRY_MODULES:
        raise KeyError(f"no registry named {name!r}; available: {', '.join(REGISTRY_MODULES)}")
    return importlib.import_module(f"bench_assets.registries.{name}").REGISTRY


def available_registries() -> tuple[str, ...]:
    return REGISTRY_MODULES
