"""The public rows' drill-down records as the site reads them: assembled from each vendor's packed
entries (`publish.packed`) a chunk of rows at a time, each time they are read.

Rendering reads them once (a row's page, every vendor's verdicts, the listing and the row-scores
file in one pass: `site.render_site`), so only one chunk of records is ever held.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

from bench_assets.golden.rows import GoldenRow
from bench_assets.manifest import Manifest
from bench_assets.publish.drilldown import drilldown_records
from bench_assets.publish.packed import CHUNK_ROWS, PackedEntries


class DrilldownRecords(Sequence[dict[str, Any]]):
    """One record per public row (`drilldown.drilldown_records`), read like a list."""

    def __init__(self, manifest: Manifest, public_rows: list[GoldenRow], entries: Mapping[str, PackedEntries]):
        self.manifest = manifest
        self.public_rows = public_rows
        self.entries = dict(entries)

    def __len__(self) -> int:
        return len(self.public_rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return drilldown_records(self.manifest, self.public_rows, self.entries)

    def span(self, start: int, stop: int) -> Iterator[dict[str, Any]]:
        """The records of rows `start` to `stop` - 1, assembled a chunk at a time (`start` a
        multiple of `packed.CHUNK_ROWS`, as the chunks are cut)."""
        if start % CHUNK_ROWS:
            raise ValueError(f"a span starts where a chunk does (a multiple of {CHUNK_ROWS}), not at {start}")
        return drilldown_records(self.manifest, self.public_rows[start:stop], self.entries, start)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError(index)
        start = position - position % CHUNK_ROWS  # the chunk it is packed in, read alone
        records = drilldown_records(self.manifest, self.public_rows[start : start + CHUNK_ROWS], self.entries, start)
        return list(records)[position - start]
