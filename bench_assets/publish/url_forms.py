"""URLs' normalized forms and their digests, each computed once while it keeps coming back.

A publication compares every returned URL with its row's golden URLs and publishes its digest:
the same few pages come back for many rows and from every vendor (at 2,520 golden rows, 19,512
distinct URLs among 208,320 results), and the golden URLs are the same for every vendor
(`metrics.normalize_url` remembers the forms; this remembers their digests too).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

from bench_assets.metrics import normalize_url

_REMEMBERED = 1 << 16  # URLs kept (the least recently used are forgotten)


@lru_cache(maxsize=_REMEMBERED)
def url_forms(url: str) -> tuple[str | None, str | None]:
    """A URL's normalized form and the SHA-256 of that form; (None, None) when it cannot be normalized."""
    try:
        form = normalize_url(url)
        return form, hashlib.sha256(form.encode()).hexdigest()
    except (ValueError, UnicodeError):
        return None, None
