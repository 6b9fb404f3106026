"""Drill-down entries packed until the pages are rendered (`runtime.packed`) come back as they
were: the same values, the named tuples as their own classes (a page reads their fields by name)."""

from __future__ import annotations

from bench_assets.publish.drilldown import FieldItem, ShownResult
from bench_assets.runtime.packed import PackedEntries


def test_entries_come_back_as_they_were_packed() -> None:
    entries = {
        f"row-{i}": {
            "vendor": "exa",
            "correct": i % 2 == 0,
            "results": [
                ShownResult(1, True),
                ShownResult(2, False, url=f"https://a.test/{i}", title="t", snippet=None, golden=True),
                ShownResult(3, False, digest_only=True, contains_answer=True),
            ],
            "fidelity_fields": [{"field": "table_cells", "items": [FieldItem(12.5, True), FieldItem("x", False)]}],
        }
        for i in range(7)
    }
    row_ids = [*entries, "row-without-entry"]
    packed = PackedEntries.pack(row_ids, entries, chunk_rows=3)
    back = packed.unpacked()
    assert back == entries
    result = back["row-4"]["results"][1]
    assert type(result) is ShownResult and result.url == "https://a.test/4" and result.golden is True
    item = back["row-4"]["fidelity_fields"][0]["items"][0]
    assert type(item) is FieldItem and item.item == 12.5 and item.found
    assert packed.chunk(1) == {r: entries[r] for r in row_ids[3:6]}
    assert packed.chunk(99) == {}
