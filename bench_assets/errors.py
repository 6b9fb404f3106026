"""Errors a user can cause with bad input: each names the input, the place and the field."""

from __future__ import annotations


class BenchInputError(ValueError):
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
        super().__init__("\n".join(lines))
