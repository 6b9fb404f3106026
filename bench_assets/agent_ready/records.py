"""Agent-ready trial records: the model, hand-entered records, warehouse rows, the leaderboard summary.

Agent-ready (DESIGN.md): an autonomous agent obtained a working API key by OTP e-mail or by the
OAuth 2.0 device authorization grant (RFC 8628), with no human in the loop, with the trial's
evidence. A trial is one attempt at one vendor by one method:

    otp_email, device_code  the two routes that can make a vendor agent-ready
    manual                  a human signed up (dashboard, card, CAPTCHA): never agent-ready
    keyless, x402           other no-human routes a vendor documents (no key, or pay per request);
                            recorded as the route taken, never counted as agent-ready

Trials come from the harness (`bench_assets.agent_ready.harness`, against the simulator) or are entered
by hand for live vendors in `data/snapshots/<id>/agent_trials.yaml`, validated here (a bad
record names the file, line and field).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from datetime import date as Date
from pathlib import Path
from typing import Any, Literal, get_args

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from bench_assets.errors import BenchInputError
from bench_assets.manifest import _line_of, read_text_file
from bench_assets.storage.warehouse import Warehouse

Method = Literal["otp_email", "device_code", "keyless", "x402", "manual"]
TrialMode = Literal["simulated", "live"]
KEY_METHODS = ("otp_email", "device_code")
ROUTE_METHODS = ("keyless", "x402")

Outcome = Literal[
    "key_works",
    "captcha_required",
    "card_required",
    "login_required",
    "access_denied",
    "expired_token",
    "signup_rejected",
    "not_offered",
    "no_email",
    "key_rejected",
    "flow_error",
    "human_required",
    "route_works",
    "route_failed",
    "route_documented",
]
# Every outcome, what it means, and the methods it can follow.
OUTCOMES: dict[Outcome, tuple[str, tuple[str, ...]]] = {
    "key_works": ("a key was issued with no human and answered a search", KEY_METHODS),
    "captcha_required": ("the flow needs a CAPTCHA solved by a human", KEY_METHODS),
    "card_required": ("the flow needs a payment card before a key works", KEY_METHODS),
    "login_required": ("the flow needs a human to sign in in a browser", KEY_METHODS),
    "access_denied": ("the vendor refused the authorization (RFC 8628 access_denied)", KEY_METHODS),
    "expired_token": ("the device code expired before it was approved (RFC 8628 expired_token)", KEY_METHODS),
    "signup_rejected": ("the vendor refused the sign-up", KEY_METHODS),
    "not_offered": ("the vendor has no such flow", KEY_METHODS),
    "no_email": ("no verification e-mail arrived", KEY_METHODS),
    "key_rejected": ("a key was issued but the search API refused it", KEY_METHODS),
    "flow_error": ("the flow answered something it does not document", KEY_METHODS + ROUTE_METHODS),
    "human_required": ("only a human can sign up (dashboard)", ("manual",)),
    "route_works": ("the no-human route answered a search", ROUTE_METHODS),
    "route_failed": ("the no-human route did not answer a search", ROUTE_METHODS),
    "route_documented": ("the vendor documents the route; it was not trialled", ROUTE_METHODS),
}
assert tuple(OUTCOMES) == get_args(Outcome)  # one entry per outcome, in the same order
METHOD_LABELS = {
    "otp_email": "OTP e-mail",
    "device_code": "device code",
    "keyless": "keyless",
    "x402": "x402 pay-per-request",
    "manual": "manual sign-up",
}


class TrialStep(BaseModel):
    """One step of a trial as evidence: when, what was sent, what came back (secrets removed), outcome."""

    model_config = ConfigDict(extra="forbid")

    at: datetime
    action: str
    request: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    outcome: str


class TrialRecord(BaseModel):
    """One trial of one vendor by one method."""

    model_config = ConfigDict(extra="forbid")

    trial_id: str
    snapshot_id: str
    vendor: str
    method: Method
    mode: TrialMode
    recorded_by: Literal["harness", "hand"]
    trial_date: Date
    started_at: datetime | None = None
    finished_at: datetime | None = None
    outcome: Outcome
    reason: str | None = None
    evidence_url: str | None = None
    key_fingerprint: str | None = None
    steps: list[TrialStep] = []
    source: str | None = None  # file:line of a hand-entered record

    @property
    def agent_ready(self) -> bool:
        return self.method in KEY_METHODS and self.outcome == "key_works"


# ---------------------------------------------------------------------------- hand-entered records


class HandEnteredTrial(BaseModel):
    """A trial run by hand against a live vendor, or a no-human route read in its docs."""

    model_config = ConfigDict(extra="forbid")

    vendor: str = Field(min_length=1)
    method: Method
    date: Date
    outcome: Outcome
    reason: str | None = Field(
        default=None, validate_default=True, description="required unless the outcome is key_works or route_works"
    )
    evidence: str = Field(pattern=r"^https?://\S+$", description="a link to the evidence (recording, log, docs page)")
    operator: str = Field(min_length=1, description="who ran the trial or read the docs")

    @field_validator("date")
    @classmethod
    def _not_future(cls, day: Date) -> Date:
        if day > datetime.now(UTC).date():
            raise ValueError(f"{day} is in the future")
        return day

    @field_validator("outcome")
    @classmethod
    def _fits_method(cls, outcome: Outcome, info: ValidationInfo) -> Outcome:
        method = info.data.get("method")
        allowed = OUTCOMES[outcome][1]
        if method is not None and method not in allowed:
            raise ValueError(f"{outcome!r} cannot follow method {method!r} (it follows {', '.join(allowed)})")
        return outcome

    @field_validator("reason")
    @classmethod
    def _reason_for_failures(cls, reason: str | None, info: ValidationInfo) -> str | None:
        outcome = info.data.get("outcome")
        if outcome is not None and outcome not in ("key_works", "route_works") and not (reason or "").strip():
            raise ValueError(f"outcome {outcome!r} needs a reason")
        return reason


class HandEnteredFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    trials: list[HandEnteredTrial] = []


def _field(loc: tuple) -> str:
    return ".".join(str(p) for p in loc) or "<file>"


def load_hand_entered(path: str | Path, snapshot_id: str, vendors: set[str]) -> list[TrialRecord]:
    """Validate `agent_trials.yaml`; raises BenchInputError naming the file, line and field."""
    path = Path(path)
    source = str(path)
    text = read_text_file(path, "trials file")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise BenchInputError(source, [(mark.line + 1 if mark else None, "<yaml>", str(exc).splitlines()[0])]) from exc
    if data is None:
        return []
    if not isinstance(data, dict):
        raise BenchInputError(source, [(None, "<file>", "expected a mapping with a 'trials' list")])
    try:
        parsed = HandEnteredFile.model_validate(data)
    except ValidationError as exc:
        raise BenchInputError(
            source, [(_line_of(text, err["loc"]), _field(err["loc"]), err["msg"]) for err in exc.errors()]
        ) from None
    problems = [
        (
            _line_of(text, ("trials", i, "vendor")),
            f"trials.{i}.vendor",
            f"{t.vendor!r} is not a vendor of snapshot {snapshot_id} ({', '.join(sorted(vendors))})",
        )
        for i, t in enumerate(parsed.trials)
        if t.vendor not in vendors
    ]
    if problems:
        raise BenchInputError(source, problems)
    records = []
    for i, t in enumerate(parsed.trials):
        digest = hashlib.sha256(f"{snapshot_id}|{i}|{t.model_dump_json()}".encode()).hexdigest()[:12]
        records.append(
            TrialRecord(
                trial_id=f"hand-{digest}",
                snapshot_id=snapshot_id,
                vendor=t.vendor,
                method=t.method,
                mode="live",
                recorded_by="hand",
                trial_date=t.date,
                outcome=t.outcome,
                reason=t.reason or OUTCOMES[t.outcome][0],
                evidence_url=t.evidence,
                source=f"{source}:{_line_of(text, ('trials', i))} ({t.operator})",
            )
        )
    return records


# ---------------------------------------------------------------------------- warehouse rows

TRIAL_COLUMNS = [
    "snapshot_id",
    "trial_id",
    "vendor",
    "method",
    "mode",
    "recorded_by",
    "trial_date",
    "started_at",
    "finished_at",
    "agent_ready",
    "outcome",
    "reason",
    "evidence_url",
    "key_fingerprint",
    "steps_json",
    "source",
]


def trials_frame(records: list[TrialRecord]) -> pd.DataFrame:
    """The `agent_trials` rows: one per vendor per trial."""
    rows = [
        {
            "snapshot_id": r.snapshot_id,
            "trial_id": r.trial_id,
            "vendor": r.vendor,
            "method": r.method,
            "mode": r.mode,
            "recorded_by": r.recorded_by,
            "trial_date": r.trial_date,
            "started_at": r.started_at,
            "finished_at": r.finished_at,
            "agent_ready": r.agent_ready,
            "outcome": r.outcome,
            "reason": r.reason,
            "evidence_url": r.evidence_url,
            "key_fingerprint": r.key_fingerprint,
            "steps_json": json.dumps([s.model_dump(mode="json") for s in r.steps]),
            "source": r.source,
        }
        for r in records
    ]
    return pd.DataFrame(rows, columns=TRIAL_COLUMNS)


def _none(x: Any) -> Any:
    return None if x is None or (isinstance(x, float) and pd.isna(x)) or x is pd.NaT else x


def records_from_frame(df: pd.DataFrame) -> list[TrialRecord]:
    """TrialRecords back from `agent_trials` rows."""
    out = []
    for row in df.to_dict("records"):
        row = {k: _none(v) for k, v in row.items()}
        trial_date = row["trial_date"]
        out.append(
            TrialRecord(
                trial_id=row["trial_id"],
                snapshot_id=row["snapshot_id"],
                vendor=row["vendor"],
                method=row["method"],
                mode=row["mode"],
                recorded_by=row["recorded_by"],
                trial_date=trial_date.date() if isinstance(trial_date, datetime) else trial_date,
                started_at=row["started_at"],
                finished_at=row["finished_at"],
                outcome=row["outcome"],
                reason=row["reason"],
                evidence_url=row["evidence_url"],
                key_fingerprint=row["key_fingerprint"],
                steps=json.loads(row["steps_json"] or "[]"),
                source=row["source"],
            )
        )
    return out


# ---------------------------------------------------------------------------- leaderboard summary


def _label(
    ready: bool | None, method: str | None, trial_date: str | None, outcome: str | None, mode: str | None = None
) -> str:
    """`yes: device code, 2026-06-02`; a trial against the simulator says so, so that a reader of
    a demo never takes a simulated vendor's sign-up flow for the real vendor's."""
    if ready is None:
        return "not trialled"
    text = "yes" if ready else f"no ({outcome})"
    where = " (simulated)" if mode == "simulated" else ""
    return f"{text}: {METHOD_LABELS.get(method or '', method)}{where}, {trial_date}"


def _evidence(r: TrialRecord) -> dict[str, Any]:
    return {
        "trial_id": r.trial_id,
        "recorded_by": r.recorded_by,
        "mode": r.mode,
        "link": r.evidence_url,
        "key_fingerprint": r.key_fingerprint,
        "steps": [s.model_dump(mode="json") for s in r.steps],
    }


def agent_ready_summary(records: list[TrialRecord]) -> dict[str, Any]:
    """The leaderboard's `agent_ready` object for one vendor.

    The latest trial by OTP e-mail, device code or manual sign-up decides (on the same date, one
    that obtained a working key wins); `ready` is None when there is none. keyless and x402 routes
    are listed under `other_routes`, never counted as agent-ready.
    """
    key_trials = [r for r in records if r.method not in ROUTE_METHODS]
    routes = sorted((r for r in records if r.method in ROUTE_METHODS), key=lambda r: (r.method, r.trial_date))
    other_routes = [
        {
            "method": r.method,
            "trial_date": r.trial_date.isoformat(),
            "outcome": r.outcome,
            "reason": r.reason,
            "mode": r.mode,
            "recorded_by": r.recorded_by,
            "link": r.evidence_url,
        }
        for r in routes
    ]
    if not key_trials:
        return {
            "ready": None,
            "method": None,
            "trial_date": None,
            "outcome": None,
            "mode": None,
            "reason": "no OTP e-mail or device-code trial recorded",
            "label": _label(None, None, None, None),
            "evidence": None,
            "trials": 0,
            "other_routes": other_routes,
        }
    latest = max(
        key_trials, key=lambda r: (r.trial_date, r.agent_ready, r.finished_at or datetime.min.replace(tzinfo=UTC))
    )
    day = latest.trial_date.isoformat()
    return {
        "ready": latest.agent_ready,
        "method": latest.method,
        "trial_date": day,
        "outcome": latest.outcome,
        "mode": latest.mode,
        "reason": latest.reason,
        "label": _label(latest.agent_ready, latest.method, day, latest.outcome, latest.mode),
        "evidence": _evidence(latest),
        "trials": len(key_trials),
        "other_routes": other_routes,
    }


def agent_ready_by_vendor(records: list[TrialRecord], vendors: list[str]) -> dict[str, dict[str, Any]]:
    return {v: agent_ready_summary([r for r in records if r.vendor == v]) for v in vendors}


def load_trial_records(warehouse: Warehouse, snapshot_id: str) -> list[TrialRecord]:
    """The snapshot's trial records as stored in `agent_trials`."""
    return records_from_frame(warehouse.rows("agent_trials", snapshot_id))
