"""Values by row kept packed (pickled and compressed, a chunk of rows at a time) until they are
read again: memory plumbing for what a publication holds between reading each vendor's archive and
rendering the rows' pages (`publish.build`, `publish.drilldown.DrilldownRecords`).

Every public row has every vendor's verdict and up to ten results: at scale, millions of small
Python objects, held from the first vendor's archive to the last page. Packed, they take a small
fraction of that; the records a page is rendered from are assembled a chunk of rows at a time
(`publish.drilldown.DrilldownRecords`), each vendor's entries unpacked as they were (dicts,
`drilldown.ShownResult` and `FieldItem` tuples).
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

CHUNK_ROWS = 200  # rows per chunk: what is unpacked at once


def _pack(value: Any) -> bytes:
    return zlib.compress(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), 1)


def _unpack(data: bytes) -> Any:
    return pickle.loads(zlib.decompress(data))


class PackedEntries:
    """One vendor's drill-down entries by row id, packed in chunks of the public rows' order
    (chunk k holds the rows `k * chunk_rows` to `(k + 1) * chunk_rows - 1` it has an entry for)."""

    def __init__(self, chunks: list[bytes], chunk_rows: int):
        self._chunks = chunks
        self.chunk_rows = chunk_rows

    @classmethod
    def pack(
        cls, row_ids: Sequence[str], entries: Mapping[str, dict[str, Any]], chunk_rows: int = CHUNK_ROWS
    ) -> PackedEntries:
        chunks = []
        for start in range(0, len(row_ids), chunk_rows):
            chunks.append(_pack({r: entries[r] for r in row_ids[start : start + chunk_rows] if r in entries}))
        return cls(chunks, chunk_rows)

    def chunk(self, number: int) -> dict[str, dict[str, Any]]:
        """The entries of the public rows of chunk `number` (none when there is no such chunk)."""
        return _unpack(self._chunks[number]) if number < len(self._chunks) else {}

    def unpacked(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for number in range(len(self._chunks)):
            out.update(self.chunk(number))
        return out
