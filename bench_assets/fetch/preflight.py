"""Preflight: before a live run pays for thousands of calls, one call per vendor that says whether
the run can work at all (`bench preflight SNAPSHOT`).

Per vendor of the manifest, the cheapest call its adapter documents (the capability whose
expected bill at the pinned prices is lowest, search on a tie, one result) goes out through the
fetch engine, like any call of the run: the manifest's endpoint, key, pacing and spend ceiling,
every attempt archived as evidence with the key redacted, in the snapshot's preflight archive
(`partitions/<snapshot>/preflight.duckdb`, partition `<snapshot>@preflight`). One attempt, no
retries: a preflight reports what the vendor answered, it does not wait out a 429.

It reports, per vendor: whether the key was accepted, the plan or credits left where the vendor
reports them in the answer (`BALANCE_READERS`), whether the endpoint was reachable, and whether
the response has the documented shape (the adapter parses it); each problem as one line.

Never paid twice: a vendor whose archived preflight answered well is reported from the archive
and not called again (`recheck` sends a new call); a vendor whose preflight failed is called
again with a new query id, so a fixed key or a topped-up account can be checked.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from bench_assets.adapters import get_adapter
from bench_assets.adapters.base import Adapter, Capability, VendorTask, scrub_secrets
from bench_assets.errors import BenchInputError
from bench_assets.fetch.classify import SPEND_CEILING_REACHED, classify_response
from bench_assets.fetch.engine import FetchItem, fetch_partition
from bench_assets.fetch.plan import fetch_settings
from bench_assets.fetch.spend import archived_spend, attempt_readings, priced_usd
from bench_assets.manifest import Manifest, VendorSpec
from bench_assets.storage.archive import PartitionArchive
from bench_assets.storage.warehouse import Warehouse

# A query any general web index answers, and a page that has stayed up for decades (IANA's).
DEFAULT_QUERY = "web search API documentation"
DEFAULT_URL = "https://example.com/"
PREFLIGHT_ROLE = "preflight"
DETAIL_CHARS = 160


def preflight_archive_path(warehouse: Warehouse, snapshot_id: str) -> Path:
    return warehouse.partitions_dir / snapshot_id / "preflight.duckdb"


def preflight_archive(warehouse: Warehouse, snapshot_id: str, vendor: str) -> PartitionArchive:
    """A vendor's preflight calls in the snapshot's preflight archive (every attempt kept). Its
    partition is "<snapshot>@preflight", so the run's own archive, spend and "already answered"
    never see them."""
    return PartitionArchive(
        preflight_archive_path(warehouse, snapshot_id),
        f"{snapshot_id}@{PREFLIGHT_ROLE}",
        vendor,
        connector=warehouse.connector,
    )


def preflight_spend(
    warehouse: Warehouse, snapshot_id: str, vendor: str, adapter: Adapter, prices: dict[str, float]
) -> float:
    """USD a vendor's preflight calls of the snapshot billed (0 when none were made). The run's fetch
    takes it off the vendor's spend ceiling: the ceiling is what the whole snapshot may spend.
    Read without a lock on the archive, so the vendor partitions of a run read it side by side."""
    path = preflight_archive_path(warehouse, snapshot_id)
    if not path.exists():
        return 0.0
    for wait in (0.2, 0.5, 1.0, 2.0, 4.0, None):  # a preflight writing the file holds it for a moment
        try:
            with duckdb.connect(str(path), read_only=True) as con:
                raw = con.execute(
                    "SELECT * FROM raw_responses WHERE snapshot_id = ? AND vendor = ? ORDER BY query_id, capability, attempt",
                    [f"{snapshot_id}@{PREFLIGHT_ROLE}", vendor],
                ).df()
            break
        except duckdb.IOException:
            if wait is None:
                raise
            time.sleep(wait)
        except duckdb.CatalogException:  # a file without the table: nothing archived
            return 0.0
    return float(archived_spend(adapter, prices, raw).sum()) if len(raw) else 0.0


# ##### WHAT A VENDOR SAYS IS LEFT ON THE ACCOUNT


def _brave_remaining(headers: dict[str, str], body: Any) -> str | None:
    """Brave's `X-RateLimit-Remaining: <per second>, <per month>`, the windows of `X-RateLimit-Limit`
    (api.search.brave.com/app/documentation/web-search/response-headers, as the team's vendor
    notes record them; the simulator sends the same headers)."""
    remaining = headers.get("x-ratelimit-remaining", "")
    limits = headers.get("x-ratelimit-limit", "")
    parts = [p.strip() for p in remaining.split(",")]
    if len(parts) < 2 or not parts[-1].isdigit():
        return None
    limit = [p.strip() for p in limits.split(",")]
    of = f" of {limit[-1]}" if len(limit) == len(parts) and limit[-1].isdigit() else ""
    return f"{parts[-1]}{of} requests left this month"


def _kagi_balance(headers: dict[str, str], body: Any) -> str | None:
    """Kagi's `meta.api_balance`, USD left on the API balance (kagiapi 0.2.1, kagiapi/models.py `Meta`)."""
    meta = body.get("meta") if isinstance(body, dict) else None
    balance = meta.get("api_balance") if isinstance(meta, dict) else None
    if isinstance(balance, (int, float)) and not isinstance(balance, bool):
        return f"${balance:,.2f} API balance"
    return None


# Adapter name -> reader of what is left on the account, from a successful answer's headers and
# body. The other vendors report only what a call used (or nothing) in their answers.
BALANCE_READERS: dict[str, Callable[[dict[str, str], Any], str | None]] = {
    "brave": _brave_remaining,
    "kagi": _kagi_balance,
}


def reported_balance(adapter_name: str, headers: dict[str, str], body: str | None) -> str | None:
    reader = BALANCE_READERS.get(adapter_name)
    if reader is None:
        return None
    try:
        parsed = json.loads(body) if body else None
    except json.JSONDecodeError:
        parsed = None
    return reader({k.lower(): v for k, v in headers.items()}, parsed)


# ##### THE CALL


@dataclass(frozen=True)
class PreflightCall:
    capability: Capability
    text: str
    expected_usd: float


def cheapest_call(spec: VendorSpec, adapter: Adapter, query: str, url: str) -> PreflightCall:
    """The capability whose documented bill for one call of one result is lowest at the pinned
    prices (search on a tie: it is the endpoint most of a run uses)."""
    calls = []
    for capability in ("search", "extract"):
        if capability in spec.endpoints and capability in adapter.capabilities:
            text = query if capability == "search" else url
            units = adapter.expected_units(VendorTask(capability, text, 1), dict(spec.request_options))
            calls.append(PreflightCall(capability, text, priced_usd(units, spec.prices_usd)))
    if not calls:
        raise BenchInputError("manifest", [(None, "endpoints", f"{adapter.name} has no endpoint its adapter can call")])
    return min(calls, key=lambda c: (c.expected_usd, c.capability != "search"))


# ##### THE REPORT


@dataclass(frozen=True)
class VendorPreflight:
    """What one vendor's preflight found (never its key)."""

    vendor: str
    capability: str | None = None
    endpoint: str | None = None
    response_class: str | None = None
    http_status: int | None = None
    key_accepted: bool | None = None  # None: the answer does not say
    reachable: bool | None = None
    shape_ok: bool | None = None  # None: no success body to read
    balance: str | None = None  # what the vendor reports left on the account, where it does
    results: int = 0
    billed_usd: float = 0.0
    checked_at: datetime | None = None
    reused: bool = False  # reported from the archive, not called again
    problem: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "vendor": self.vendor,
            "capability": self.capability,
            "endpoint": self.endpoint,
            "response_class": self.response_class,
            "http_status": self.http_status,
            "key_accepted": self.key_accepted,
            "reachable": self.reachable,
            "shape_ok": self.shape_ok,
            "balance": self.balance,
            "results": self.results,
            "billed_usd": round(self.billed_usd, 6),
            "checked_at": self.checked_at.isoformat() if self.checked_at else None,
            "reused_from_archive": self.reused,
            "problem": self.problem,
        }


def _yes_no(value: bool | None, yes: str, no: str) -> str:
    return "?" if value is None else (yes if value else no)


@dataclass(frozen=True)
class PreflightReport:
    snapshot_id: str
    mode: str
    vendors: list[VendorPreflight]

    @property
    def problems(self) -> list[str]:
        return [f"{v.vendor}: {v.problem}" for v in self.vendors if v.problem]

    def table(self) -> str:
        header = f"{'vendor':<11} {'call':<8} {'HTTP':<5} {'key':<9} {'reachable':<9} {'shape':<6} {'billed':>9}  left on the account"
        lines = [header]
        for v in self.vendors:
            lines.append(
                f"{v.vendor:<11} {v.capability or '-':<8} {v.http_status or '-'!s:<5} "
                f"{_yes_no(v.key_accepted, 'accepted', 'refused'):<9} {_yes_no(v.reachable, 'yes', 'no'):<9} "
                f"{_yes_no(v.shape_ok, 'ok', 'wrong'):<6} {'$' + format(v.billed_usd, '.4f'):>9}  "
                f"{v.balance or 'not reported'}{'  (archived, not sent again)' if v.reused else ''}"
            )
        return "\n".join(lines)


def _one_line(text: str | None, secrets: tuple[str, ...]) -> str:
    """A vendor's message on one short line: the key scrubbed, an HTML page's tags dropped."""
    text = scrub_secrets(text, secrets) or ""
    if text.lstrip().startswith("<"):  # a gateway's or CDN's HTML page: its words, not its markup
        text = re.sub(r"<(script|style)\b.*?</\1>|<[^>]*>", " ", text, flags=re.DOTALL | re.IGNORECASE)
    flat = " ".join(text.split())
    return flat if len(flat) <= DETAIL_CHARS else flat[: DETAIL_CHARS - 1] + "…"


def _problem(
    response_class: str,
    error_class: str | None,
    status: int | None,
    detail: str,
    key_env: str | None,
    retry_after: str | None = None,
) -> str | None:
    http = f"HTTP {status}" if status is not None else "no response"
    said = f" ({http}: {detail})" if detail else f" ({http})"
    if response_class in ("ok", "empty"):
        return None
    if response_class == "auth":
        return f"key refused{said}; check ${key_env}" if key_env else f"key refused{said}"
    if error_class == "rate_limited":
        wait = f"it asks to wait {retry_after} (Retry-After)" if retry_after else "it gave no Retry-After"
        return f"rate limited{said}; {wait}: try again later, or check the plan's rate limit"
    if response_class == "quota":
        return f"out of credit or quota{said}; top up the account or change the plan"
    if response_class == "timeout":
        return f"endpoint not reachable in time ({detail})"
    if response_class == "server" and status is None:
        return f"endpoint not reachable ({detail})"
    if response_class == "server":
        return f"vendor server error{said}"
    if response_class == "blocked":
        return f"a challenge page instead of the API ({detail})"
    if response_class == "malformed":
        return f"response not in the documented shape{said}"
    return f"request rejected{said}; check the endpoint and options in the manifest"


def read_preflight(
    vendor: str,
    adapter: Adapter,
    spec: VendorSpec,
    attempts: pd.DataFrame,
    secrets: tuple[str, ...] = (),
    reused: bool = False,
) -> VendorPreflight:
    """The report of one vendor from its archived preflight call (the final attempt of `attempts`,
    one query id's rows); pure, no network."""
    billed = float(archived_spend(adapter, spec.prices_usd, attempts).sum())
    final = attempts[attempts["final"]].iloc[-1]
    capability = str(final["capability"])
    status = None if pd.isna(final["http_status"]) else int(final["http_status"])
    headers = json.loads(final["response_headers_json"]) if isinstance(final["response_headers_json"], str) else {}
    body = final["body"] if isinstance(final["body"], str) else None
    error = final["transport_error"] if isinstance(final["transport_error"], str) else None
    request = json.loads(final["request_json"]) if isinstance(final["request_json"], str) else {}
    base = VendorPreflight(
        vendor,
        capability=capability,
        endpoint=request.get("url") or spec.endpoints.get(capability),  # type: ignore[call-overload]
        http_status=status,
        billed_usd=billed,
        checked_at=final["started_at"].to_pydatetime() if not pd.isna(final["started_at"]) else None,
        reused=reused,
    )
    if error == SPEND_CEILING_REACHED:
        ceiling = spec.spend_ceiling_usd
        return replace(
            base,
            response_class="quota",
            problem=f"not sent: the manifest's spend ceiling (${ceiling}) is used up by earlier preflight calls",
        )
    classified = classify_response(adapter, capability, status, headers, body, error)  # type: ignore[arg-type]
    parsed = classified.parsed
    success = status is not None and 200 <= status < 300
    cls = classified.response_class
    error_class = parsed.error_class if parsed else None
    unpriced = sorted({unit for r in attempt_readings(adapter, spec.prices_usd, attempts) for unit in r.unpriced})
    problem = _problem(
        cls,
        error_class,
        status,
        _one_line(classified.detail, secrets),
        spec.key_env,
        next((v for k, v in headers.items() if k.lower() == "retry-after"), None) if not success else None,
    )
    if unpriced and problem is None:
        problem = (
            f"billed in {', '.join(map(repr, unpriced))}, which vendors.{vendor}.prices_usd does not price: add the "
            "price of each from the archived pricing page (a run stops at the first such response)"
        )
    return replace(
        base,
        response_class=cls,
        reachable=status is not None and cls != "blocked",
        key_accepted=_key_accepted(cls, success, error_class),
        shape_ok=(cls in ("ok", "empty")) if success else None,
        balance=reported_balance(adapter.name, headers, body) if cls in ("ok", "empty") else None,
        results=len(parsed.results) if parsed and cls == "ok" else 0,
        problem=problem,
    )


def _key_accepted(response_class: str, success: bool, error_class: str | None) -> bool | None:
    """Whether the vendor took the key: yes when it answered (a success, or "out of credit", which it
    says only of an account it knows), no when it refused it, unknown otherwise (a 429, a 5xx, no
    answer: those come before or without the key check)."""
    if response_class == "auth":
        return False
    if (success and response_class != "blocked") or (response_class == "quota" and error_class != "rate_limited"):
        return True
    return None


# ##### THE RUN


async def _preflight_vendor(
    warehouse: Warehouse,
    manifest: Manifest,
    vendor: str,
    url: Callable[[str], str],
    key_for: Callable[[str], str],
    recheck: bool,
    query: str,
    extract_url: str,
) -> VendorPreflight:
    spec = manifest.vendors[vendor]
    adapter = get_adapter(spec.adapter)
    try:
        key = key_for(vendor)
    except BenchInputError as exc:  # names the variable, never a value
        return VendorPreflight(vendor, problem="; ".join(message for _, _, message in exc.problems))
    call = cheapest_call(spec, adapter, query, extract_url)
    archive = preflight_archive(warehouse, manifest.snapshot_id, vendor)
    try:
        earlier = archive.frame()
        finals = earlier[earlier["final"]] if len(earlier) else earlier
        if len(finals) and not recheck:
            last = finals.sort_values("started_at").iloc[-1]["query_id"]
            report = read_preflight(vendor, adapter, spec, earlier[earlier["query_id"] == last], (key,), reused=True)
            if report.problem is None:
                return report
        spent = float(archived_spend(adapter, spec.prices_usd, earlier).sum()) if len(earlier) else 0.0
        spent += _sibling_preflight_spend(archive, manifest, vendor)  # the ceiling is the provider's
        ceiling = spec.spend_ceiling_usd
        if ceiling is not None and spent + call.expected_usd > ceiling + 1e-12:
            return VendorPreflight(
                vendor,
                capability=call.capability,
                problem=f"not sent: its cheapest call (${call.expected_usd:.4f}) would pass the manifest's spend "
                f"ceiling (${ceiling}; preflight has spent ${spent:.4f})",
            )
        unsettled = set(earlier["query_id"]) - set(finals["query_id"]) if len(earlier) else set()
        query_id = min(unsettled) if unsettled else f"{PREFLIGHT_ROLE}-{len(set(finals['query_id'])) + 1}"
        settings = replace(
            fetch_settings(spec, url, key, warehouse.pacing_store, capabilities=[call.capability]), max_attempts=1
        )
        item = FetchItem(query_id, PREFLIGHT_ROLE, call.capability, call.text, 1)
        await fetch_partition(adapter, [item], settings, archive)
        attempts = archive.frame()
        return read_preflight(vendor, adapter, spec, attempts[attempts["query_id"] == query_id], (key,))
    finally:
        archive.close()


def _sibling_preflight_spend(archive: PartitionArchive, manifest: Manifest, vendor: str) -> float:
    """USD the preflight calls of the other configurations of `vendor`'s provider billed: the spend
    ceiling is the provider's, shared by its configurations (read through the archive's connection)."""
    provider = manifest.vendors[vendor].provider
    spent = 0.0
    for sibling in manifest.configurations_of(provider):
        if sibling == vendor:
            continue
        raw = archive.con.execute(
            "SELECT * FROM raw_responses WHERE snapshot_id = ? AND vendor = ? ORDER BY query_id, capability, attempt",
            [archive.snapshot_id, sibling],
        ).df()
        if len(raw):
            spec = manifest.vendors[sibling]
            spent += float(archived_spend(get_adapter(spec.adapter), spec.prices_usd, raw).sum())
    return spent


def preflight_snapshot(
    warehouse: Warehouse,
    manifest: Manifest,
    url: Callable[[str], str],
    key_for: Callable[[str], str],
    vendors: list[str] | None = None,
    recheck: bool = False,
    query: str = DEFAULT_QUERY,
    extract_url: str = DEFAULT_URL,
) -> PreflightReport:
    """One cheapest documented call per vendor of the manifest (or of `vendors`), all at once,
    through the fetch engine; `url` maps a manifest endpoint to where it is sent, `key_for` gives a
    vendor's key (raising BenchInputError, naming the variable, when there is none)."""
    chosen = sorted(manifest.vendors) if vendors is None else vendors
    unknown = sorted(set(chosen) - set(manifest.vendors))
    if unknown:
        raise BenchInputError(
            f"data/snapshots/{manifest.snapshot_id}/manifest.yaml",
            [
                (None, "vendors", f"no vendor {v!r} in the manifest (it has {', '.join(sorted(manifest.vendors))})")
                for v in unknown
            ],
        )

    async def provider_in_turn(names: list[str]) -> list[VendorPreflight]:
        # Configurations of one provider share its spend ceiling: each call sees what the others billed.
        return [
            await _preflight_vendor(warehouse, manifest, v, url, key_for, recheck, query, extract_url) for v in names
        ]

    async def run_all() -> list[VendorPreflight]:
        by_provider: dict[str, list[str]] = {}
        for v in chosen:
            by_provider.setdefault(manifest.vendors[v].provider, []).append(v)
        done = await asyncio.gather(*(provider_in_turn(names) for names in by_provider.values()))
        reports = {r.vendor: r for group in done for r in group}
        return [reports[v] for v in chosen]

    return PreflightReport(manifest.snapshot_id, manifest.mode, asyncio.run(run_all()))
