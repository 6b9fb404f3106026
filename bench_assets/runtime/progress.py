"""How long work lets its caller show progress without knowing how it is shown: a `Step` is entered
around each stage (named as the operator reads it), a `Track` wraps the iterable of results as they
come (its length known). The command line shows them (`cli.progress`); every other caller (the
Dagster assets, the tests) takes the defaults, which show nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

Step = Callable[[str], AbstractContextManager[Any]]
Track = Callable[[Iterable[Any], int, str], Iterable[Any]]


def unannounced(what: str) -> AbstractContextManager[Any]:
    return nullcontext()


def untracked(items: Iterable[Any], total: int, description: str) -> Iterable[Any]:
    return items
