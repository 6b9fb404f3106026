"""Work side by side in processes of its own: every item of a list in forked children, a few at
a time (`in_processes`); one job in a forked child beside this process's own share of the work
(`ForkedJob`); and a pool of fresh (spawned) interpreters for work that must not inherit this
process's state (`spawned_pool`).

This is the one place the project forks, pools processes or touches the garbage collector
(`runtime.memory`); domain code hands it work. A forked child starts with everything its parent
had already read (golden rows, the split, the leak guard, any change a test made to the code),
sends back what it derived, and exits, which gives back at once all the memory its work took. No
pool and no helper thread: the parent forks from its one thread and waits on the children's
pipes. A resource that must not cross a fork (a file lock, an object store's filesystem) is
reopened by its owner when it finds itself in another process (`storage.warehouse.Warehouse`).

How many go at once follows the machine (`worker_count`): one per core this process may use,
no more than its available memory holds at the job's own need, and `$BENCH_VENDOR_WORKERS`
when an operator sets it.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.connection import Connection, wait
from typing import Any, Generic, Protocol, TypeVar
from weakref import WeakSet

from bench_assets.runtime.memory import available_memory_mib

T = TypeVar("T")
R = TypeVar("R")

WORKERS_ENV = "BENCH_VENDOR_WORKERS"
# What one vendor's work holds at most while it runs (its archive read, its part built), for
# deciding how many fit in memory; benchmarks/README.md has the figures it comes from.
VENDOR_JOB_MIB = 600


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def machine_workers(job_mib: int = VENDOR_JOB_MIB) -> int:
    """Processes this machine can run side by side: one per usable core, no more than the memory
    available now holds at `job_mib` each, at least one."""
    by_memory = available_memory_mib() // max(1, job_mib)
    return max(1, min(usable_cores(), by_memory))


def worker_count(jobs: int, env: str = WORKERS_ENV, job_mib: int = VENDOR_JOB_MIB) -> int:
    """How many jobs go at once: `$BENCH_VENDOR_WORKERS` (`env`) when set, else what the machine
    holds (`machine_workers`), never more than there are jobs."""
    wanted = os.environ.get(env, "").strip()
    count = int(wanted) if wanted else machine_workers(job_mib)
    return max(1, min(count, jobs))


class ReopensInChild(Protocol):
    def reopen_in_child(self) -> None: ...


_REOPENED: WeakSet[Any] = WeakSet()


def reopen_in_children(resource: ReopensInChild) -> None:
    """Have `resource.reopen_in_child()` called first thing in every child this module forks from
    now on, for as long as the resource lives: what must not cross a fork (a file lock, an object
    store's filesystem, a database connection) is opened again there by its owner."""
    _REOPENED.add(resource)


def _reopen_in_this_child() -> None:
    # Called as the child's job starts, not from an `os.register_at_fork` hook: such a hook can run
    # before a library's own (fsspec's resets its event loop), and a filesystem opened there would
    # wait forever on the parent's loop.
    for resource in list(_REOPENED):
        resource.reopen_in_child()


def spawned_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` fresh interpreters (spawned, not forked: each imports what it needs, so
    nothing of this process's threads, locks or Dagster instance crosses into it)."""
    return ProcessPoolExecutor(max_workers=max(1, workers), mp_context=multiprocessing.get_context("spawn"))


class WorkerFailed(RuntimeError):
    """A child's job raised something that could not be sent back as it was."""


def _child(job: Callable[[Any], Any], item: Any, send: Connection) -> None:
    # The child exits once its answer is sent, which frees everything at once: the collector's
    # passes would walk every object the job made, for nothing.
    gc.disable()
    try:
        _reopen_in_this_child()
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
            process.kill()  # a child this call started, by its own handle (SIGKILL: see ForkedJob.cancel)
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
            # SIGKILL, not SIGTERM: a child inherits its parent's handlers, and one that turns SIGTERM
            # into KeyboardInterrupt (Dagster's, in a process that ran its CLI) raised before the child
            # reaches its job unwinds the parent's copied stack in the child (the xdist worker's, in
            # the tests: the controller heard "keyboard-interrupt" from it)
            self._process.kill()
            self._end()

    def _end(self) -> None:
        self._receive.close()
        self._process.join()
        self._process = None
        self._job = _ended
        gc.unfreeze()


def _ended() -> Any:
    raise WorkerFailed("the forked job was ended before its answer was read")
