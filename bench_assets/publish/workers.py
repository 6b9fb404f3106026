"""Vendors side by side: each vendor's part in a process of its own, a few at a time; and one
job in a forked child beside this process's own share of the work (`ForkedJob`).

Publication builds each vendor's part from its own archive (`publish.snapshot.published_vendor_parts`)
and `bench rescore` re-derives every vendor from it (`rescore.snapshot.rescore_vendor`): no other
vendor's work needs it, so on a machine with two cores two vendors go at once. Each runs
in a child forked for it alone (so it starts with everything already read: the golden rows, the
split, the leak guard, and any change a test made to the code), sends back what it derived, and
exits, which gives back all the memory its vendor's archive took. No pool and no helper thread:
the parent forks from its one thread and waits on the children's pipes.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import traceback
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

WORKERS_ENV = "BENCH_VENDOR_WORKERS"


def worker_count(jobs: int) -> int:
    """How many vendors go at once: $BENCH_VENDOR_WORKERS, else one per core, at most two (each
    holds one vendor's archive), never more than there are vendors."""
    wanted = os.environ.get(WORKERS_ENV, "").strip()
    count = int(wanted) if wanted else min(2, os.cpu_count() or 1)
    return max(1, min(count, jobs))


class WorkerFailed(RuntimeError):
    """A child's job raised something that could not be sent back as it was."""


def _child(job: Callable[[Any], Any], item: Any, send: Connection) -> None:
    try:
        outcome: tuple[str, Any] = ("done", job(item))
    except BaseException as exc:  # sent back and raised in the parent
        outcome = ("failed", exc)
    try:
        send.send(outcome)
    except Exception:  # the exception (or result) does not pickle: send its text
        send.send(("failed", WorkerFailed("".join(traceback.format_exception(outcome[1]))[-4000:])))
    finally:
        send.close()


def in_processes(
    items: Sequence[T], job: Callable[[T], R], workers: int, cost: Callable[[T], float] | None = None
) -> Iterator[R]:
    """`job(item)` for every item, `workers` at a time each in a forked child, yielded in the
    order of `items` (as soon as the next one is done). With `cost` (an estimate of each item's
    work) the costliest are started first, so no worker is left alone with a long job at the end;
    the results still come in the order of `items`. One worker, or a daemonic process: in this
    process, one by one.
    A job that raises stops the rest (the running children are ended) and raises here."""
    # a daemonic process (a Celery prefork worker's child, a multiprocessing pool's) may have no
    # children of its own: there the items go one by one
    if workers <= 1 or multiprocessing.current_process().daemon:
        for item in items:
            yield job(item)
        return
    context = multiprocessing.get_context("fork")
    # what the parent holds stays out of the children's garbage collections: a collection would
    # touch (and so copy) every page the parent shares with them
    gc.freeze()
    queue = list(enumerate(items))
    if cost is not None:
        queue.sort(key=lambda pair: -cost(pair[1]))  # a stable sort: equal costs keep their order
    running: dict[Connection, tuple[int, Any]] = {}
    finished: dict[int, R] = {}
    following = 0
    try:
        while queue or running:
            while queue and len(running) < workers:
                index, item = queue.pop(0)
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_child, args=(job, item, send), daemon=True)
                process.start()
                send.close()  # the child's end: the parent reads only
                running[receive] = (index, process)
            for ready in wait(list(running)):
                assert isinstance(ready, Connection)
                index, process = running.pop(ready)
                try:
                    status, value = ready.recv()
                except EOFError:
                    status, value = "failed", WorkerFailed(f"the process deriving item {index} ended without an answer")
                finally:
                    ready.close()
                process.join()
                if status == "failed":
                    raise value
                finished[index] = value
            while following in finished:
                yield finished.pop(following)
                following += 1
    finally:
        gc.unfreeze()
        for receive, (_, process) in running.items():
            process.terminate()  # a child this call started, by its own handle
            process.join()
            receive.close()


class ForkedJob(Generic[R]):
    """`job()` started at once in a forked child while this process goes on with its own share of
    the work; `result()` waits for the child and returns what the job returned (or raises what it
    raised), `cancel()` ends it; as a context manager it is ended on leaving unless its result was
    read. In a daemonic process, which may have no children, the job runs in `result()`."""

    def __init__(self, job: Callable[[], R]):
        self._job = job
        self._process: Any = None
        if multiprocessing.current_process().daemon:
            return
        context = multiprocessing.get_context("fork")
        gc.freeze()  # as in `in_processes`: the child's collections leave the parent's pages alone
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(target=_child, args=(lambda _: job(), None, send), daemon=True)
        self._process.start()
        send.close()  # the child's end: the parent reads only

    def result(self) -> R:
        if self._process is None:
            return self._job()
        try:
            status, value = self._receive.recv()
        except EOFError:
            status, value = "failed", WorkerFailed("the forked job ended without an answer")
        finally:
            self._end()
        if status == "failed":
            raise value
        return value

    def __enter__(self) -> ForkedJob[R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()

    def cancel(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._end()

    def _end(self) -> None:
        self._receive.close()
        self._process.join()
        self._process = None
        self._job = _ended
        gc.unfreeze()


def _ended() -> Any:
    raise WorkerFailed("the forked job was ended before its answer was read")
