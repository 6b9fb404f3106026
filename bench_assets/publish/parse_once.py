"""A vendor's adapter that parses each archived response once, however many readers ask.

Publishing (and `bench rescore`) reads one vendor's archive several times with scoring's own
functions: `score.partition.read_evidence` prices every attempt (`fetch.spend`) and classifies
every final one (`fetch.classify`), and the evidence bundle reads every attempt's billed units
again (`fetch.spend.attempt_readings`). Each of them calls `adapter.parse` with the same
arguments for the same body, so at 16,000 archived responses a vendor the same JSON was decoded
and walked three or four times. `parse_once(adapter)` is the adapter with its `parse` remembered
per (task, status, headers, body): every reader still calls the function it always called, and
gets the very result the first call gave (a `ParsedResponse` is frozen, and no reader changes it).

Use one per vendor and per pass over its archive, and let it go with the archive: it holds every
parsed response of the responses it read.
"""

from __future__ import annotations

from typing import Any, cast

from bench_assets.adapters.base import Adapter, ParsedResponse, VendorTask


class _ParseOnce:
    """The adapter, every attribute delegated, `parse` remembered (a body that raises
    `MalformedResponse` is not remembered: it raises again the next time, as it would)."""

    def __init__(self, adapter: Adapter):
        self._adapter = adapter
        self._parsed: dict[tuple[Any, ...], ParsedResponse] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._adapter, name)

    def parse(self, task: VendorTask, status: int, headers: dict[str, str], body_text: str) -> ParsedResponse:
        # the body string is the archive's own object for every reader: its hash is computed once
        key = (task, status, tuple(headers.items()), body_text)
        try:
            parsed = self._parsed.get(key)
        except TypeError:  # a header value that is not a string (unhashable): read it again
            return self._adapter.parse(task, status, headers, body_text)
        if parsed is None:
            parsed = self._parsed[key] = self._adapter.parse(task, status, headers, body_text)
        return parsed


def parse_once(adapter: Adapter) -> Adapter:
    """`adapter`, its `parse` remembered per call (see the module); every other attribute is the adapter's own."""
    if isinstance(adapter, _ParseOnce):
        return cast(Adapter, adapter)
    return cast(Adapter, _ParseOnce(adapter))


def forget_parsed(adapter: Adapter) -> None:
    """Let go of every response `parse_once(adapter)` remembered (nothing for a plain adapter)."""
    if isinstance(adapter, _ParseOnce):
        adapter._parsed.clear()
