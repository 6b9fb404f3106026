"""Pacing requests to one vendor within its documented rate limits.

A vendor states a limit for its account or key (all endpoints together) and sometimes tighter
limits per endpoint (Exa: /search 10 QPS, /contents 100 QPS). Requests to the vendor come from
more than one place at a time: a partition's search and extract calls share one account, and a
sentinel probe run can overlap a vendor's fetch run, each in its own process. So pacing has two
layers, and a request waits for both:

- per capability, in this process: requests evenly spaced at the endpoint's limit (a leaky bucket
  from aiolimiter holding at most two, so a late wake-up is made up rather than lost);
- per vendor, across every process that shares `shared_dir`: a sliding-window log (pyrate-limiter's
  SQLite bucket behind a file lock) that admits at most the vendor's limit in any window, whoever
  sends. The directory sits beside the warehouse, so every run on the machine (or on a volume
  whose file locks hold across machines) shares it. Without a directory the vendor limit is kept
  in this process only.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from aiolimiter import AsyncLimiter
from pyrate_limiter import Limiter, Rate, SQLiteBucket


def even_pacer(per_second: float) -> AsyncLimiter:
    """Requests paced at `per_second`, a leaky bucket holding at most two: evenly spaced, with one
    slot of slack so a wake-up that comes late is made up rather than lost. A vendor that allows
    `per_second` in any second (with a bucket of at least two) is never exceeded."""
    capacity = 2 if per_second >= 2 else 1
    return AsyncLimiter(capacity, capacity / per_second)


def window_rate(per_second: float) -> Rate:
    """`per_second` as a whole number of requests per window: n = max(1, floor(rate)) requests in
    n / rate seconds (10.0/s -> 10 per 1000 ms; 12.4/s -> 12 per 968 ms; 0.25/s -> 1 per 4000 ms),
    so no window of that length ever holds more than the rate allows."""
    count = max(1, math.floor(per_second))
    return Rate(count, max(1, math.ceil(count / per_second * 1000)))


class VendorPacer:
    """Admission of one vendor's requests: its capability's even pace, then the vendor's limit."""

    def __init__(
        self,
        vendor: str,
        capability_rates: dict[str, float],
        vendor_rate: float | None = None,
        shared_dir: Path | None = None,
    ):
        self.vendor = vendor
        self.capability_pacers = {cap: even_pacer(rate) for cap, rate in capability_rates.items()}
        self.vendor_rate = vendor_rate
        self.shared_path: Path | None = None
        self._local: AsyncLimiter | None = None
        self._shared: Limiter | None = None
        if vendor_rate is None:
            return
        if shared_dir is None:
            self._local = even_pacer(vendor_rate)
            return
        shared_dir.mkdir(parents=True, exist_ok=True)
        self.shared_path = shared_dir / f"{vendor}.sqlite"
        bucket = SQLiteBucket.init_from_file(
            [window_rate(vendor_rate)], table="requests", db_path=str(self.shared_path), use_file_lock=True
        )
        self._shared = Limiter(bucket)

    @asynccontextmanager
    async def slot(self, capability: str) -> AsyncIterator[None]:
        """Wait until a request of `capability` may be sent now."""
        async with self.capability_pacers[capability]:
            if self._shared is not None:
                await self._shared.try_acquire_async(self.vendor)
            elif self._local is not None:
                await self._local.acquire()
            yield

    def close(self) -> None:
        if self._shared is not None:
            self._shared.close()  # stops its leak thread and closes the SQLite connection
            self._shared = None
