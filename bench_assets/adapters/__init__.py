"""Vendor adapters: one module per vendor, discovered by name.

Adding a vendor means adding `bench_assets/adapters/<vendor>.py` with one `Adapter` subclass
and one manifest entry; nothing else changes.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from bench_assets.adapters.base import Adapter

_NOT_VENDORS = {"base"}


@cache
def available_adapters() -> dict[str, type[Adapter]]:
    """Every adapter class in this package, keyed by its vendor name."""
    found: dict[str, type[Adapter]] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name in _NOT_VENDORS or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Adapter)
                and value is not Adapter
                and value.__module__ == module.__name__
            ):
                found[value.name] = value
    return found


def default_key_env(name: str) -> str:
    """The environment variable an adapter's key is read from when the manifest names none: the
    `key_env` of its module's MANIFEST_DEFAULTS, else `<NAME>_API_KEY`."""
    adapter = available_adapters().get(name)
    defaults = getattr(importlib.import_module(adapter.__module__), "MANIFEST_DEFAULTS", {}) if adapter else {}
    return defaults.get("key_env") or f"{name.upper()}_API_KEY"


def get_adapter(name: str) -> Adapter:
    adapters = available_adapters()
    if name not in adapters:
        raise KeyError(f"no adapter named {name!r}; available: {sorted(adapters)}")
    return adapters[name]()
