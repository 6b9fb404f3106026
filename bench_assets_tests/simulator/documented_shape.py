"""Comparing a response with a vendor's documented example, level by level (for the vendors
with no official SDK to parse the simulator's answers: Brave, Serper, Jina)."""

from __future__ import annotations

from typing import Any


def json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _same_kind(example: Any, actual: Any) -> bool:
    # null in the example: the field is documented as nullable, any value fits; an integer is a number
    return (
        example is None
        or json_kind(example) == json_kind(actual)
        or (json_kind(example), json_kind(actual)) == ("number", "integer")
    )


def _item_shape(items: list[Any]) -> tuple[Any, set[str]]:
    """What the example's list items describe together: one item (each key with the first value
    the example gives it) and the keys only some items have (optional)."""
    dicts = [i for i in items if isinstance(i, dict)]
    if len(dicts) != len(items) or not dicts:
        return items[0], set()
    merged: dict[str, Any] = {}
    for item in dicts:
        for key, value in item.items():
            merged.setdefault(key, value)
    on_every = set.intersection(*(set(d) for d in dicts))
    return merged, set(merged) - on_every


def shape_differences(
    example: Any, actual: Any, optional: frozenset[str] | set[str] = frozenset(), path: str = ""
) -> list[str]:
    """Where `actual` departs from the shape of a documented `example`: a key the example shows
    that `actual` lacks, or a value of another JSON type, at every level the example shows.

    List items are compared with the example's items taken together: a key every example item
    has is required, a key only some have is optional (its type is checked when present).
    `optional` names further paths the vendor sends only for some queries or pages (dotted, with
    `[]` for a list item: "organic[].date", "data.metadata.viewport")."""
    if not _same_kind(example, actual):
        return [f"{path or '<body>'}: {json_kind(actual)}, documented {json_kind(example)}"]
    out: list[str] = []
    if isinstance(example, dict):
        for key, value in example.items():
            where = f"{path}.{key}" if path else key
            if key not in actual:
                if where not in optional:
                    out.append(f"{where}: missing")
                continue
            out += shape_differences(value, actual[key], optional, where)
    elif isinstance(example, list) and example:
        item, sometimes = _item_shape(example)
        more = set(optional) | {f"{path}[].{key}" for key in sometimes}
        for value in actual:
            out += shape_differences(item, value, more, f"{path}[]")
    return sorted(set(out))
