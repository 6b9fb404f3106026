"""The project's errors. Core code raises these; only `bench_assets.defs` turns them into a
`dg.Failure` (and the CLI into a message and an exit code), so the core never imports Dagster.

Every message says what is wrong and what to do about it; `details` carries what the Dagster UI
shows beside it (markdown tables, file paths), never a holdout id or a secret.
"""

from __future__ import annotations


class BenchError(Exception):
    """An error an operator can act on, with optional details for the UI (name -> markdown)."""

    def __init__(self, message: str, details: dict[str, str] | None = None):
        super().__init__(message)
        self.details = dict(details or {})


class BenchInputError(BenchError, ValueError):
    """Bad input given by a user (file, manifest, CLI argument, environment).

    The message always names the input (file path or variable), where in it (line), and
    the field, so that the person who wrote it can fix it without reading our code.
    """

    def __init__(self, source: str, problems: list[tuple[int | None, str, str]]):
        self.source = source
        self.problems = problems
        lines = []
        for line, field, message in problems:
            where = f"{source}:{line}" if line is not None else source
            lines.append(f"{where}: field '{field}': {message}")
        super().__init__("\n".join(lines), {"input": source})


class NotReadyError(BenchError):
    """A stage was asked for before what it needs exists or holds (e.g. no golden rows yet, or a
    golden row that failed verification): the message names the stage to run first."""


class SnapshotImmutableError(BenchError, RuntimeError):
    """A write that would change a published snapshot (corrections go through errata)."""


class HoldoutLeakError(BenchError):
    """Files or packets about to leave the operator would reveal the holdout; nothing was written.
    Which rows: only in the private store (the message names the file)."""


class PublicationRefused(BenchError):
    """The snapshot may not be published now (lifecycle, review period, a changed archive)."""


class WarehouseLostError(BenchError):
    """The central warehouse is missing, unreadable or behind its custody journal, although the
    journal or the partition archives show it held data: it is never replaced by an empty one.
    The message names what is missing and the restore command (`bench warehouse restore`)."""
