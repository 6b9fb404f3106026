"""The operator's conflict-of-interest declaration, filed beside the manifest as `disclosures.md`.

A live snapshot is headline-eligible only with a valid declaration. The file is markdown with a
YAML front matter block that states who operates the benchmark, when they declared, and every
financial relationship with a vendor (or `none`):

    ---
    operator: bench maintainers (Jane Doe)
    declared_on: 2026-09-28
    relationships:            # or: relationships: none
      - vendor: exa
        relationship: free API credits for the 2026-q3 snapshot (USD 50)
    ---
    Any further text, published on the Disclosures page.

The disclosures page shows the declaration and the text. A simulated snapshot may file the text
alone (no front matter); it is never headline-eligible anyway.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench_assets.errors import BenchInputError
from bench_assets.manifest import read_text_file

DECLARATION_FILE = "disclosures.md"
_FENCE = "---"


class Relationship(BaseModel):
    """One financial relationship between the operator and a vendor."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    vendor: str = Field(min_length=1)
    relationship: str = Field(min_length=1, description="what it is: credits, payment, employment, investment, …")


class OperatorDeclaration(BaseModel):
    """The declaration in the front matter of disclosures.md."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    operator: str = Field(min_length=1, description="who operates this snapshot")
    declared_on: date
    relationships: Literal["none"] | list[Relationship] = Field(
        description="every financial relationship with a vendor, or `none`"
    )


def split_front_matter(text: str) -> tuple[str | None, str, int]:
    """(front matter YAML or None, the markdown body, the line the body starts on)."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != _FENCE:
        return None, text, 1
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == _FENCE:
            return "".join(lines[1:i]), "".join(lines[i + 1 :]), i + 2
    return "".join(lines[1:]), "", len(lines) + 1


def load_declaration(path: Path) -> tuple[OperatorDeclaration | None, str]:
    """The declaration (None when the file has no front matter) and the markdown body; a bad
    front matter raises BenchInputError naming the file, line and field."""
    text = read_text_file(path, "declaration")
    front, body, _ = split_front_matter(text)
    if front is None:
        return None, body
    try:
        data = yaml.safe_load(front)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise BenchInputError(
            str(path), [(mark.line + 2 if mark else None, "<front matter>", str(exc).splitlines()[0])]
        ) from None
    if not isinstance(data, dict):
        raise BenchInputError(str(path), [(2, "<front matter>", "the front matter must be a YAML mapping")])
    try:
        return OperatorDeclaration.model_validate(data), body
    except ValidationError as exc:
        raise BenchInputError(
            str(path),
            [
                (_line_of(front, e["loc"]), ".".join(str(p) for p in e["loc"]) or "<front matter>", e["msg"])
                for e in exc.errors()
            ],
        ) from None


def _line_of(front: str, loc: tuple) -> int | None:
    if loc and isinstance(loc[0], str):
        for i, line in enumerate(front.splitlines(), start=2):  # line 1 of the file is the fence
            if line.startswith(f"{loc[0]}:"):
                return i
    return None


def declaration_reasons(snapshot_dir: Path | None, mode: str) -> list[str]:
    """Why the snapshot's declaration does not make it headline-eligible (empty: it does, or the
    mode is not live, which is a reason of its own)."""
    if mode != "live":
        return []
    path = snapshot_dir / DECLARATION_FILE if snapshot_dir is not None else None
    if path is None or not path.exists():
        return [f"no operator declaration filed ({DECLARATION_FILE} with its front matter beside the manifest)"]
    try:
        declaration, _ = load_declaration(path)
    except BenchInputError as exc:
        return [f"operator declaration invalid: {exc}".replace("\n", "; ")]
    if declaration is None:
        return [
            f"no operator declaration: {DECLARATION_FILE} has no front matter (operator, declared_on, relationships)"
        ]
    return []


def disclosures_markdown(path: Path) -> str | None:
    """What the disclosures page shows: the declaration's statement, then the file's text (None: no file)."""
    if not path.exists():
        return None
    try:
        declaration, body = load_declaration(path)
    except BenchInputError as exc:
        return (
            f"**The operator declaration in {DECLARATION_FILE} is invalid** ({exc}).\n\n"
            + split_front_matter(path.read_text(encoding="utf-8"))[1]
        )
    if declaration is None:
        return body
    if declaration.relationships == "none":
        ties = "no financial relationship with any vendor"
    else:
        ties = "these financial relationships with vendors: " + "; ".join(
            f"**{r.vendor}**: {r.relationship}" for r in declaration.relationships
        )
    return (
        f"**Operator declaration.** {declaration.operator} declared on {declaration.declared_on.isoformat()} "
        f"{ties}.\n\n{body}"
    )
