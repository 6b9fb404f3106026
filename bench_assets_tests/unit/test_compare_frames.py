"""`bench rescore` compares a warehouse table with its re-derivation (`rescore.compare.compare_frames`):
rows passed over as certainly the same a column at a time must be exactly those the cell-by-cell
comparison finds nothing in, whatever the columns' dtypes (nullable or not) and whatever the
cells (missing as None, NaN or NA; True against 1; 1 against 1.0; a row on one side only)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench_assets.rescore import compare
from bench_assets.rescore.compare import compare_frames

DTYPES = ["Int32", "int64", "boolean", "bool", "float64", "object"]
CELL = {
    "Int32": st.one_of(st.none(), st.integers(-3, 3)),
    "int64": st.integers(-3, 3),
    "boolean": st.one_of(st.none(), st.booleans()),
    "bool": st.booleans(),
    "float64": st.one_of(st.just(math.nan), st.sampled_from([0.0, 1.0, 0.5, 1.0000000001, -2.0])),
    # values equal across types (True == 1 == 1.0), which `same_value` tells apart
    "object": st.sampled_from([None, "a", "", "1", 1, True, 1.0, 0, False, 0.0, math.nan]),
}


@st.composite
def frames(draw: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    stored_types = draw(st.lists(st.sampled_from(DTYPES), min_size=1, max_size=4))
    derived_types = [draw(st.sampled_from([t, *DTYPES])) for t in stored_types]
    keys = draw(st.lists(st.sampled_from(["r1", "r2", "r3", "r4", "r5"]), min_size=1, max_size=5, unique=True))

    def frame(types: list[str], ids: list[str]) -> pd.DataFrame:
        data: dict[str, Any] = {"vendor": ["v"] * len(ids), "row_id": ids}
        for n, kind in enumerate(types):
            values = [draw(CELL[kind]) for _ in ids]
            data[f"c{n}"] = pd.Series(values, dtype=kind) if kind != "object" else pd.Series(values, dtype=object)
        return pd.DataFrame(data)

    stored = frame(stored_types, keys)
    derived_ids = draw(st.permutations(keys)) if draw(st.booleans()) else [*keys[:-1], "r9"]
    derived = frame(derived_types, list(derived_ids))
    if set(derived_ids) == set(keys) and draw(st.booleans()):  # the same cells, as a re-derivation mostly has
        for n, kind in enumerate(derived_types):
            if kind == stored_types[n]:
                derived[f"c{n}"] = stored.set_index("row_id")[f"c{n}"].reindex(derived["row_id"]).to_numpy()
                derived[f"c{n}"] = derived[f"c{n}"].astype(kind)
    return stored, derived


def _described(found: list[compare.Difference]) -> list[tuple[Any, ...]]:
    return [(d.surface, d.vendor, d.item, repr(d.published), repr(d.derived)) for d in found]


@settings(max_examples=400, deadline=None)
@given(pair=frames())
def test_rows_passed_over_hold_no_difference(pair: tuple[pd.DataFrame, pd.DataFrame], monkeypatch_module) -> None:
    stored, derived = pair
    columns = [c for c in stored.columns if c.startswith("c")]
    fast = compare_frames("t", stored, derived, ["vendor", "row_id"], columns)
    monkeypatch_module.setattr(compare, "_rows_that_may_differ", lambda *args: None)
    try:
        slow = compare_frames("t", stored, derived, ["vendor", "row_id"], columns)
    finally:
        monkeypatch_module.undo()
    assert _described(fast) == _described(slow)


def test_a_changed_cell_is_found_among_many_equal_rows() -> None:
    n = 1000
    stored = pd.DataFrame(
        {
            "vendor": ["v"] * n,
            "row_id": [f"r{i}" for i in range(n)],
            "rank": pd.Series([i % 7 or None for i in range(n)], dtype="Int32"),
            "correct": pd.Series([i % 3 == 0 for i in range(n)], dtype="boolean"),
            "fidelity": np.where(np.arange(n) % 5 == 0, np.nan, np.arange(n) / n),
        }
    )
    derived = stored.copy()
    derived["correct"] = derived["correct"].astype(object)
    derived.loc[501, "fidelity"] = 0.25
    derived.loc[700, "correct"] = 1  # a number where a bool was: a difference, though 1 == True
    stored["note"] = pd.Series(["x"] * n, dtype=object)
    stored.loc[900, "note"] = True
    derived["note"] = stored["note"].copy()
    derived.loc[900, "note"] = 1
    found = compare_frames("row_scores", stored, derived, ["vendor", "row_id"], ["rank", "correct", "fidelity", "note"])
    assert [(d.item, d.published, d.derived) for d in found] == [
        ("r501: fidelity", 0.501, 0.25),
        ("r700: correct", False, 1),
        ("r900: note", True, 1),
    ]


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch
