"""Drill-down records kept packed (pickled and compressed, a chunk of rows at a time) until a page
is rendered from them.

A snapshot of 12,600 golden rows has about 8,800 public rows, each with every vendor's verdict
and up to ten results: a million small Python objects, several hundred megabytes, and all of them
were held from the first vendor's archive to the last page. Packed, they take a few tens of
megabytes; a page, a listing or a data file unpacks the chunks it reads, one at a time. The
records are the same dicts (and `drilldown.ShownResult` / `FieldItem` tuples) as before, unpacked.
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

CHUNK_ROWS = 200  # rows per chunk: what is unpacked at once


def _pack(value: Any) -> bytes:
    return zlib.compress(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), 1)


def _unpack(data: bytes) -> Any:
    return pickle.loads(zlib.decompress(data))


class PackedRecords(Sequence[dict[str, Any]]):
    """A sequence of records, packed `CHUNK_ROWS` at a time (`pack`); read like a list."""

    def __init__(self, chunks: list[bytes], sizes: list[int]):
        self._chunks = chunks
        self._sizes = sizes
        self._starts = [sum(sizes[:i]) for i in range(len(sizes))]

    @classmethod
    def pack(cls, records: Iterable[dict[str, Any]], chunk_rows: int = CHUNK_ROWS) -> PackedRecords:
        chunks: list[bytes] = []
        sizes: list[int] = []
        batch: list[dict[str, Any]] = []
        for record in records:
            batch.append(record)
            if len(batch) == chunk_rows:
                chunks.append(_pack(batch))
                sizes.append(len(batch))
                batch = []
        if batch:
            chunks.append(_pack(batch))
            sizes.append(len(batch))
        return cls(chunks, sizes)

    def __len__(self) -> int:
        return sum(self._sizes)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for chunk in self._chunks:
            yield from _unpack(chunk)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            if index.step not in (None, 1):
                return [self[i] for i in range(*index.indices(len(self)))]
            return self._span(index)
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError(index)
        for start, size, chunk in zip(self._starts, self._sizes, self._chunks):
            if position < start + size:
                return _unpack(chunk)[position - start]
        raise IndexError(index)

    def _span(self, index: slice) -> list[dict[str, Any]]:
        """A contiguous slice, each chunk it touches unpacked once."""
        first, stop, _ = index.indices(len(self))
        out: list[dict[str, Any]] = []
        for start, size, chunk in zip(self._starts, self._sizes, self._chunks):
            if start + size <= first or start >= stop:
                continue
            rows = _unpack(chunk)
            out += rows[max(0, first - start) : max(0, stop - start)]
        return out

    @property
    def packed_bytes(self) -> int:
        return sum(len(c) for c in self._chunks)


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
