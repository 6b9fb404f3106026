"""Holding a request body or a response body to a vendor's archived OpenAPI 3.0 description.

The descriptions live in `data/vendor_specs/` (each with its source and SHA-256 in its README).
OpenAPI 3.0 schemas are JSON Schema with a few differences; the one that matters here is
`nullable: true`, turned into a `null` alternative before validation. `$ref`s resolve inside the
same document. Formats are not checked (the vendors' own examples do not all honour them).
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import Any

from jsonschema import Draft7Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from bench_assets_tests.helpers import REPO

SPECS = REPO / "data" / "vendor_specs"
_ROOT = "urn:vendor-spec"


def _json_schema(node: Any) -> Any:
    """An OpenAPI 3.0 schema tree as JSON Schema: `nullable: true` admits null."""
    if isinstance(node, list):
        return [_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable") is True:
        return {"anyOf": [out, {"type": "null"}]}
    return out


def _pointer(*parts: str) -> str:
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


class OpenApiSpec:
    """One archived description: `data/vendor_specs/<relative>`."""

    def __init__(self, relative: str):
        self.path = SPECS / relative

    @cached_property
    def raw(self) -> bytes:
        return self.path.read_bytes()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()

    @cached_property
    def document(self) -> dict[str, Any]:
        return json.loads(self.raw)

    @cached_property
    def _registry(self) -> Registry:
        resource = Resource.from_contents(_json_schema(self.document), default_specification=DRAFT7)
        return Registry().with_resource(_ROOT, resource)

    def _errors(self, pointer: str, instance: Any) -> list[str]:
        validator = Draft7Validator({"$ref": _ROOT + pointer}, registry=self._registry)
        return sorted(
            f"{'/'.join(str(p) for p in e.absolute_path) or '<body>'}: {e.message}"
            for e in validator.iter_errors(instance)
        )

    def request_errors(self, path: str, method: str, body: Any) -> list[str]:
        """Where `body` departs from the operation's JSON request body schema ([] when it conforms)."""
        pointer = _pointer("paths", path, method.lower(), "requestBody", "content", "application/json", "schema")
        return self._errors(pointer, body)

    def response_errors(self, path: str, method: str, status: int, body: Any) -> list[str]:
        """Where `body` departs from the operation's JSON response schema for `status`."""
        pointer = _pointer(
            "paths", path, method.lower(), "responses", str(status), "content", "application/json", "schema"
        )
        return self._errors(pointer, body)
