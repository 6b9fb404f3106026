"""A request as a simulated vendor sees it: which vendor, where, and its headers and body."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass
class SimRequest:
    vendor: str
    method: str
    host: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body or b"null")
        except json.JSONDecodeError:
            return None
