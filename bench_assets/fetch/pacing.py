"""Pacing requests to one vendor within its documented rate limits.

A vendor states a limit for its account or key (all endpoints together) and sometimes tighter
limits per endpoint (Exa: /search 10 QPS, /contents 100 QPS). Requests to the vendor come from
more than one place at a time: a partition's search and extract calls share one account, and a
sentinel probe run can overlap a vendor's fetch run, each in its own process. So pacing has two
layers, and a request waits for both:

- per capability, in this process: requests evenly spaced at the endpoint's limit (a leaky bucket
  from aiolimiter holding at most two, so a late wake-up is made up rather than lost);
- per vendor, across every process that shares the log: a sliding-window log that admits at most
  the vendor's limit in any window, whoever sends. On one machine it is pyrate-limiter's SQLite
  bucket behind a file lock in a directory beside the warehouse, shared by every run there (the
  lock is `ProcessFileLock`, a bare `flock`: filelock's own lock resolved its path and polled on
  every request, a large share of a fetch's CPU once limits are raised). Beyond
  one machine (`$BENCH_PACING_URL`, a `redis://` URL) it is pyrate-limiter's Redis bucket: one
  sorted set per vendor, checked and appended atomically by a Lua script on the server, timed by
  the Redis server's clock (so machines whose clocks differ still share one window). Without
  either the vendor limit is kept in this process only.
"""

from __future__ import annotations

import fcntl
import math
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from aiolimiter import AsyncLimiter
from pyrate_limiter import Limiter, Rate, RedisBucket, SQLiteBucket
from redis import Redis

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


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


class ProcessFileLock:
    """An exclusive lock held by one thread of one process at a time on this machine: `flock` on a
    file every process opens, re-entrant within its thread (pyrate-limiter takes the bucket's lock
    again inside the limiter's). The same kernel lock as filelock's on the same path."""

    def __init__(self, path: str):
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._thread = threading.RLock()
        self._depth = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not self._thread.acquire(blocking, timeout):
            return False
        if self._depth == 0:
            try:
                # blocking: the other holder is a request away from releasing it (one SQLite write)
                fcntl.flock(self._fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self._thread.release()
                return False
        self._depth += 1
        return True

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._thread.release()

    def __enter__(self) -> ProcessFileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def close(self) -> None:
        os.close(self._fd)


class ServerClockRedisBucket(RedisBucket):
    """pyrate-limiter's Redis bucket, timed by the Redis server's clock rather than this machine's:
    every process, on every machine, stamps and windows its requests on one clock."""

    def now(self) -> int:
        seconds, micros = self.redis.time()  # type: ignore[misc]  # a synchronous client
        return int(seconds) * 1000 + int(micros) // 1000


def is_redis_url(store: Path | str | None) -> bool:
    return isinstance(store, str) and store.startswith(REDIS_SCHEMES)


class VendorPacer:
    """Admission of one vendor's requests: its capability's even pace, then the vendor's limit.

    `shared` is where the vendor's account-wide log lives: a directory (SQLite, this machine), a
    Redis URL (every machine), or None (this process only)."""

    def __init__(
        self,
        vendor: str,
        capability_rates: dict[str, float],
        vendor_rate: float | None = None,
        shared: Path | str | None = None,
    ):
        self.vendor = vendor
        self.capability_pacers = {cap: even_pacer(rate) for cap, rate in capability_rates.items()}
        self.vendor_rate = vendor_rate
        self.shared_path: Path | None = None
        self._local: AsyncLimiter | None = None
        self._file_lock: ProcessFileLock | None = None
        self._shared: Limiter | None = None
        self._redis: Redis | None = None
        if vendor_rate is None:
            return
        if shared is None:
            self._local = even_pacer(vendor_rate)
            return
        if is_redis_url(shared):
            self._redis = Redis.from_url(str(shared), socket_timeout=10, socket_connect_timeout=10)
            bucket = ServerClockRedisBucket.init(
                [window_rate(vendor_rate)], self._redis, bucket_key=f"bench:pacing:{vendor}"
            )
            self._shared = Limiter(bucket)
            return
        shared_dir = Path(shared)
        shared_dir.mkdir(parents=True, exist_ok=True)
        self.shared_path = shared_dir / f"{vendor}.sqlite"
        created = SQLiteBucket.init_from_file(  # the table and WAL mode, set up under filelock's lock
            [window_rate(vendor_rate)], table="requests", db_path=str(self.shared_path), use_file_lock=True
        )
        self._file_lock = ProcessFileLock(str(self.shared_path) + ".lock")
        self._shared = Limiter(SQLiteBucket(created.rates, created.conn, created.table, lock=self._file_lock))

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
        if self._file_lock is not None:
            self._file_lock.close()
            self._file_lock = None
        if self._redis is not None:
            self._redis.close()
            self._redis = None
