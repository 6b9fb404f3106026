"""What an operator reads while a vendor fetch runs, and what its last line says it cost.

A live fetch runs for tens of minutes; silent, it cannot be told from a wedged one. So the fetch
reports, as it goes, the rows done of the rows it has to send, the spend of this run so far and
the final answers that were not `ok`, by response class (`fetch.classify.RESPONSE_CLASSES`): at
every tenth of the rows and at least every `every_seconds` while rows complete. Its last line
says what this run sent and was billed, never the archive's total, and when it sent nothing,
why (every row already archived).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

# A line at every tenth of the rows, and at least this often while rows complete.
PROGRESS_STEPS = 10
PROGRESS_EVERY_SECONDS = 30.0


def _classes(counts: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass
class FetchProgress:
    """Counts of one partition's fetch, and the lines that report them."""

    vendor: str
    to_send: int  # rows (query x capability) this run has to send
    archived: int  # rows already answered in the archive: not sent again
    log: Callable[[str], None]
    every_seconds: float = PROGRESS_EVERY_SECONDS
    clock: Callable[[], float] = time.monotonic
    done: int = 0
    not_ok: Counter[str] = field(default_factory=Counter)  # final answers by response class, other than ok
    retries: int = 0
    _last_line_at: float = 0.0
    _next_step: int = 0

    def __post_init__(self) -> None:
        self._last_line_at = self.clock()
        self._step = max(1, -(-self.to_send // PROGRESS_STEPS))  # ceil: at most PROGRESS_STEPS lines by count
        self._next_step = self._step

    def row_done(self, response_class: str, spend_usd: float) -> None:
        """One row has its final answer (`response_class`); `spend_usd`: this run's spend so far."""
        self.done += 1
        if response_class != "ok":
            self.not_ok[response_class] += 1
        now = self.clock()
        if self.done >= self._next_step or now - self._last_line_at >= self.every_seconds:
            while self._next_step <= self.done:
                self._next_step += self._step
            self._last_line_at = now
            if self.done < self.to_send:  # the last row is reported by `finished`
                self.log(self.line(spend_usd))

    def line(self, spend_usd: float) -> str:
        pct = 100.0 * self.done / self.to_send if self.to_send else 100.0
        errors = _classes(self.not_ok) or "none"
        return (
            f"{self.vendor}: {self.done}/{self.to_send} rows sent ({pct:.0f} %), spend this run ${spend_usd:.4f}, "
            f"{self.retries} retries, not ok by class: {errors}"
        )

    def start(self) -> None:
        """The first line, when there is anything to send."""
        if self.to_send:
            self.log(f"{self.vendor}: {self.to_send} rows to send, {self.archived} already archived (not sent again)")

    def end_line(self, sent: int, attempts: int, spend_usd: float, archive_spend_usd: float) -> str:
        """The run's last line: what this run sent and was billed; the archive's total beside it."""
        if sent == 0:
            why = (
                f"all {self.archived} rows already archived" if self.archived else "no rows to send"
            ) + ", nothing re-sent"
            return (
                f"{self.vendor}: sent nothing ({why}); spend this run $0.0000 "
                f"(the partition's archive holds ${archive_spend_usd:.4f} billed by earlier runs)"
            )
        return (
            f"{self.vendor}: sent {sent} rows ({attempts} attempts, {self.retries} retries), "
            f"{self.archived} already archived; spend this run ${spend_usd:.4f} "
            f"(the partition's archive: ${archive_spend_usd:.4f}); not ok by class: {_classes(self.not_ok) or 'none'}"
        )
