"""What a long `bench` command shows while it works, on stderr (stdout keeps its result: the
leaderboard, the report): a line when each step starts and one when it ends, always; and a
progress bar (tqdm) over the steps that count something, on a terminal only, so that a log file
or a CI log stays lines of text. `$BENCH_PROGRESS`: 1 shows the bars anyway, 0 never."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from tqdm import tqdm

from bench_assets.cli.help import WIDTH, fit

T = TypeVar("T")


def bars_shown() -> bool:
    """Progress bars: forced by $BENCH_PROGRESS (1 on, 0 off), else on when stderr is a terminal."""
    forced = os.environ.get("BENCH_PROGRESS", "").strip().lower()
    if forced in ("1", "true", "yes", "on"):
        return True
    if forced in ("0", "false", "no", "off"):
        return False
    return sys.stderr.isatty()


def say(text: str) -> None:
    """A step line on stderr, fitted to `WIDTH`, printed above any bar that is showing."""
    tqdm.write(fit(text), file=sys.stderr)
    sys.stderr.flush()


@contextmanager
def step(what: str) -> Iterator[None]:
    """`what …` when the step starts, `what: done in 12.3s` when it ends (nothing more if it fails:
    the failure says why)."""
    say(f"{what} …")
    started = time.monotonic()
    yield
    say(f"{what}: done in {time.monotonic() - started:.1f}s")


def bar(total: int, description: str, unit: str) -> tqdm:
    """A progress bar on stderr, `WIDTH` columns at most, shown when `bars_shown()`."""
    return tqdm(
        total=total,
        desc=description,
        unit=unit,
        file=sys.stderr,
        disable=not bars_shown(),
        leave=False,
        ncols=min(shutil.get_terminal_size().columns, WIDTH),
    )


def shown_path(path: Path) -> str:
    """A path as short as it stays unambiguous: relative to the current directory when under it,
    else `~/…` under the user's home, else absolute."""
    path = path.resolve()
    if path.is_relative_to(Path.cwd()):
        return str(path.relative_to(Path.cwd()))
    if path.is_relative_to(Path.home()):
        return str(Path("~") / path.relative_to(Path.home()))
    return str(path)


def tracked(items: Iterable[T], total: int, description: str) -> Iterator[T]:
    """`items` as they come, with a bar over them (`runtime.progress.Track`)."""
    with bar(total, description, "") as progress:
        for item in items:
            yield item
            progress.update()
