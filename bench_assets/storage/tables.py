"""Every warehouse table, declared once: its grain, typed columns, key and where it is stored.

The DDL, the column lists that writers and the Parquet lake use, and the table reference in
docs/warehouse.md (`scripts/readme_tables.py`) are all generated from these declarations, so none can drift.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # a DuckDB type


@dataclass(frozen=True)
class Table:
    """One table: `grain` says what one row is; `key` its primary key (empty: none);
    `frozen_when_published` whether a published snapshot's rows are immutable; `in_lake` whether
    the Parquet data path stores it as one object per snapshot x vendor partition."""

    name: str
    grain: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()
    frozen_when_published: bool = True
    in_lake: bool = False

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column_ddl(self) -> str:
        """The column definitions alone (no key), e.g. for a typed scratch table."""
        return ", ".join(f"{c.name} {c.type}" for c in self.columns)

    def ddl(self) -> str:
        """The body of its CREATE TABLE: typed columns and the primary key."""
        key = f", PRIMARY KEY ({', '.join(self.key)})" if self.key else ""
        return self.column_ddl() + key

    def create_sql(self, name: str | None = None, temporary: bool = False) -> str:
        kind = "TEMP TABLE" if temporary else "TABLE"
        return f"CREATE {kind} IF NOT EXISTS {name or self.name} ({self.ddl()})"


def columns(*pairs: tuple[str, str]) -> tuple[Column, ...]:
    return tuple(Column(name, kind) for name, kind in pairs)


_TABLES = (
    Table(
        "snapshots",
        "one row per snapshot",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("mode", "VARCHAR"),
            ("manifest_path", "VARCHAR"),
            ("manifest_sha256", "VARCHAR"),
            ("manifest_json", "VARCHAR"),
            ("status", "VARCHAR"),
            ("registered_at", "TIMESTAMPTZ"),
        ),
        key=("snapshot_id",),
    ),
    Table(
        "golden_rows",
        "one row per golden row of a snapshot",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("row_id", "VARCHAR"),
            ("cohort", "VARCHAR"),
            ("stratum", "VARCHAR"),
            ("provenance", "VARCHAR"),
            ("task_type", "VARCHAR"),
            ("request_text", "VARCHAR"),
            ("task_json", "VARCHAR"),
            ("verification_json", "VARCHAR"),
            ("source_file", "VARCHAR"),
            ("source_line", "INTEGER"),
            ("published_on", "VARCHAR"),  # ISO date, when the golden page's source states it
        ),
        key=("snapshot_id", "row_id"),
    ),
    Table(
        "golden_verifications",
        "one row per golden row: its latest verification",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("row_id", "VARCHAR"),
            ("checked_at", "TIMESTAMPTZ"),
            ("checked_url", "VARCHAR"),
            ("http_status", "INTEGER"),
            ("content_sha256", "VARCHAR"),
            ("passed", "BOOLEAN"),
            ("failures_json", "VARCHAR"),
        ),
        key=("snapshot_id", "row_id"),
    ),
    Table(
        "query_split",
        "one row per golden row: public or holdout",
        columns(("snapshot_id", "VARCHAR"), ("row_id", "VARCHAR"), ("stratum", "VARCHAR"), ("split", "VARCHAR")),
        key=("snapshot_id", "row_id"),
    ),
    Table(
        "raw_responses",
        "one row per HTTP attempt to a vendor (every attempt is evidence)",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("vendor", "VARCHAR"),
            ("query_id", "VARCHAR"),
            ("role", "VARCHAR"),
            ("capability", "VARCHAR"),
            ("attempt", "INTEGER"),
            ("started_at", "TIMESTAMPTZ"),
            ("latency_ms", "DOUBLE"),
            ("request_json", "VARCHAR"),
            ("http_status", "INTEGER"),
            ("response_headers_json", "VARCHAR"),
            ("body", "VARCHAR"),
            ("body_sha256", "VARCHAR"),
            ("transport_error", "VARCHAR"),
            ("final", "BOOLEAN"),
            ("adapter_version", "VARCHAR"),
        ),
        key=("snapshot_id", "vendor", "query_id", "capability", "attempt"),
        in_lake=True,
    ),
    Table(
        "response_results",
        "one row per result a vendor returned for a golden row (parsed from raw_responses)",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("vendor", "VARCHAR"),
            ("row_id", "VARCHAR"),
            ("rank", "INTEGER"),
            ("url", "VARCHAR"),
            ("url_normalized", "VARCHAR"),
            ("title", "VARCHAR"),
            ("snippet", "VARCHAR"),
            ("published", "VARCHAR"),
            ("content_chars", "INTEGER"),
        ),
        in_lake=True,
    ),
    Table(
        "row_scores",
        "one row per vendor per golden row: class and scores",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("vendor", "VARCHAR"),
            ("row_id", "VARCHAR"),
            ("split", "VARCHAR"),
            ("stratum", "VARCHAR"),
            ("cohort", "VARCHAR"),
            ("task_type", "VARCHAR"),
            ("response_class", "VARCHAR"),
            ("n_results", "INTEGER"),
            ("first_hit_rank", "INTEGER"),
            ("hit_at_1", "BOOLEAN"),
            ("hit_at_3", "BOOLEAN"),
            ("hit_at_5", "BOOLEAN"),
            ("hit_at_10", "BOOLEAN"),
            ("fidelity", "DOUBLE"),
            ("fidelity_label", "VARCHAR"),
            ("answer_score", "DOUBLE"),
            ("answer_rule", "VARCHAR"),
            ("correct", "BOOLEAN"),
            ("billed_usd", "DOUBLE"),
            ("latency_ms", "DOUBLE"),
            ("attempts", "INTEGER"),
            ("request_id", "VARCHAR"),
            ("error_detail", "VARCHAR"),
            ("miss_reason", "VARCHAR"),
        ),
        key=("snapshot_id", "vendor", "row_id"),
        in_lake=True,
    ),
    Table(
        "vendor_metrics",
        "one row per vendor x scope x metric of a snapshot: value, n and 95 % interval",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("vendor", "VARCHAR"),
            ("scope", "VARCHAR"),
            ("scope_value", "VARCHAR"),
            ("metric", "VARCHAR"),
            ("value", "DOUBLE"),
            ("n", "INTEGER"),
            ("low", "DOUBLE"),
            ("high", "DOUBLE"),
        ),
    ),
    Table(
        "vendor_comparisons",
        "one row per pair of scored vendors of a snapshot: their paired comparison on the rows both were "
        "scored on for the ranking figure (2×2 counts, exact McNemar p raw and Holm-adjusted, the difference "
        "a − b with Newcombe's paired interval, the vendor found better)",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("vendor_a", "VARCHAR"),
            ("vendor_b", "VARCHAR"),
            ("task_types", "VARCHAR"),
            ("n", "INTEGER"),
            ("both_correct", "INTEGER"),
            ("a_only", "INTEGER"),
            ("b_only", "INTEGER"),
            ("neither", "INTEGER"),
            ("difference", "DOUBLE"),
            ("low", "DOUBLE"),
            ("high", "DOUBLE"),
            ("p_value", "DOUBLE"),
            ("p_adjusted", "DOUBLE"),
            ("better", "VARCHAR"),
        ),
        key=("snapshot_id", "vendor_a", "vendor_b"),
    ),
    Table(
        "fetch_versions",
        "one row per fetch run of a vendor partition that sent requests (or its first run): the code's commit "
        "and uncommitted changes, Python, package and adapter versions, SHA-256 of the input files",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("vendor", "VARCHAR"),
            ("responses_sent", "INTEGER"),
            ("recorded_at", "TIMESTAMPTZ"),
            ("code_commit", "VARCHAR"),
            ("code_dirty", "BOOLEAN"),
            ("code_source", "VARCHAR"),
            ("code_changes_sha256", "VARCHAR"),
            ("python", "VARCHAR"),
            ("packages_json", "VARCHAR"),
            ("adapters_json", "VARCHAR"),
            ("files_json", "VARCHAR"),
        ),
        key=("snapshot_id", "vendor", "recorded_at"),
        in_lake=True,
    ),
    Table(
        "publication_versions",
        "one row per published snapshot: the code, Python, package and adapter versions and input files' "
        "SHA-256 it was published with (as its leaderboard.json states them)",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("recorded_at", "TIMESTAMPTZ"),
            ("code_commit", "VARCHAR"),
            ("code_dirty", "BOOLEAN"),
            ("code_source", "VARCHAR"),
            ("code_changes_sha256", "VARCHAR"),
            ("python", "VARCHAR"),
            ("packages_json", "VARCHAR"),
            ("adapters_json", "VARCHAR"),
            ("files_json", "VARCHAR"),
        ),
        key=("snapshot_id",),
    ),
    Table(
        "agent_trials",
        "one row per vendor per agent-ready trial (harness or hand-entered), with its evidence",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("trial_id", "VARCHAR"),
            ("vendor", "VARCHAR"),
            ("method", "VARCHAR"),
            ("mode", "VARCHAR"),
            ("recorded_by", "VARCHAR"),
            ("trial_date", "DATE"),
            ("started_at", "TIMESTAMPTZ"),
            ("finished_at", "TIMESTAMPTZ"),
            ("agent_ready", "BOOLEAN"),
            ("outcome", "VARCHAR"),
            ("reason", "VARCHAR"),
            ("evidence_url", "VARCHAR"),
            ("key_fingerprint", "VARCHAR"),
            ("steps_json", "VARCHAR"),
            ("source", "VARCHAR"),
        ),
        key=("snapshot_id", "trial_id"),
    ),
    Table(
        "sentinel_pages",
        "one row per sentinel page of a snapshot: its unique phrase and authoritative publish time",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("batch_id", "VARCHAR"),
            ("sentinel_id", "VARCHAR"),
            ("url", "VARCHAR"),
            ("phrase", "VARCHAR"),
            ("title", "VARCHAR"),
            ("page_json", "VARCHAR"),
            ("published_at", "TIMESTAMPTZ"),
            ("recorded_at", "TIMESTAMPTZ"),
            ("mode", "VARCHAR"),
            ("deploy_path", "VARCHAR"),
        ),
        # Sentinel probes keep running after publication, so they are not frozen.
        key=("snapshot_id", "sentinel_id"),
        frozen_when_published=False,
    ),
    Table(
        "sentinel_probes",
        "one row per probe (vendor x sentinel x 6-hourly tick): outcome and the final raw response",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("vendor", "VARCHAR"),
            ("sentinel_id", "VARCHAR"),
            ("tick_at", "TIMESTAMPTZ"),
            ("probed_at", "TIMESTAMPTZ"),
            ("query", "VARCHAR"),
            ("response_class", "VARCHAR"),
            ("found", "BOOLEAN"),
            ("rank", "INTEGER"),
            ("n_results", "INTEGER"),
            ("billed_usd", "DOUBLE"),
            ("latency_ms", "DOUBLE"),
            ("attempts", "INTEGER"),
            ("http_status", "INTEGER"),
            ("request_json", "VARCHAR"),
            ("response_headers_json", "VARCHAR"),
            ("body", "VARCHAR"),
            ("body_sha256", "VARCHAR"),
            ("transport_error", "VARCHAR"),
            ("request_id", "VARCHAR"),
            ("adapter_version", "VARCHAR"),
        ),
        key=("snapshot_id", "vendor", "sentinel_id", "tick_at"),
        frozen_when_published=False,
    ),
    Table(
        "publications",
        "one row per published file of a snapshot",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("path", "VARCHAR"),
            ("sha256", "VARCHAR"),
            ("bytes", "BIGINT"),
            ("published_at", "TIMESTAMPTZ"),
        ),
        key=("snapshot_id", "path"),
    ),
    Table(
        "snapshot_lifecycle",
        "one row per lifecycle transition of a snapshot (draft, frozen, published)",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("status", "VARCHAR"),
            ("previous", "VARCHAR"),
            ("changed_at", "TIMESTAMPTZ"),
            ("note", "VARCHAR"),
        ),
        frozen_when_published=False,
    ),
    Table(
        "decoy_queries",
        "one row per decoy sent with the holdout (private: never published, never scored)",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("row_id", "VARCHAR"),
            ("stratum", "VARCHAR"),
            ("task_type", "VARCHAR"),
            ("request_text", "VARCHAR"),
        ),
        key=("snapshot_id", "row_id"),
    ),
    Table(
        "review_packets",
        "one row per vendor per snapshot: the review packet sent and when",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("vendor", "VARCHAR"),
            ("sent_on", "DATE"),
            ("business_days", "INTEGER"),
            ("opens_on", "DATE"),
            ("packet_path", "VARCHAR"),
            ("packet_sha256", "VARCHAR"),
            ("public_rows", "INTEGER"),
            ("responses", "INTEGER"),
        ),
        key=("snapshot_id", "vendor"),
    ),
    Table(
        "vendor_replies",
        "one row per vendor reply to a snapshot, stored and published verbatim",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("vendor", "VARCHAR"),
            ("received_on", "DATE"),
            ("path", "VARCHAR"),
            ("sha256", "VARCHAR"),
        ),
        key=("snapshot_id", "vendor"),
        frozen_when_published=False,
    ),
    Table(
        "dead_rows",
        "one row per golden row that failed verification: since when, and its replacement",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("row_id", "VARCHAR"),
            ("stratum", "VARCHAR"),
            ("task_type", "VARCHAR"),
            ("split", "VARCHAR"),
            ("dead_since", "DATE"),
            ("failures_json", "VARCHAR"),
            ("replacement_row_id", "VARCHAR"),
            ("replaced_on", "DATE"),
        ),
        key=("snapshot_id", "row_id"),
    ),
    Table(
        "registry_responses",
        "one row per HTTP attempt to a registry of golden truth (every attempt is evidence; rows are re-derived from the final ones)",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("registry", "VARCHAR"),
            ("request_key", "VARCHAR"),
            ("attempt", "INTEGER"),
            ("started_at", "TIMESTAMPTZ"),
            ("latency_ms", "DOUBLE"),
            ("request_json", "VARCHAR"),
            ("http_status", "INTEGER"),
            ("response_headers_json", "VARCHAR"),
            ("body", "VARCHAR"),
            ("body_sha256", "VARCHAR"),
            ("transport_error", "VARCHAR"),
            ("final", "BOOLEAN"),
            ("outcome", "VARCHAR"),
            ("records", "INTEGER"),
            ("rejected_json", "VARCHAR"),
        ),
        key=("snapshot_id", "registry", "request_key", "attempt"),
    ),
    Table(
        "errata",
        "one row per change that made a new version of a published snapshot (an erratum applied, or a "
        "vendor's reply filed): the version it corrected and the version it created, recorded before "
        "the new version is published (`action`: rescore, refetch or reply)",
        columns(
            ("snapshot_id", "VARCHAR"),
            ("erratum_id", "VARCHAR"),
            ("corrected_version", "VARCHAR"),
            ("new_version", "VARCHAR"),
            ("vendor", "VARCHAR"),
            ("action", "VARCHAR"),
            ("applied_at", "TIMESTAMPTZ"),
            ("entry_json", "VARCHAR"),
        ),
        key=("snapshot_id", "erratum_id"),
        frozen_when_published=False,
    ),
)

TABLES: dict[str, Table] = {t.name: t for t in _TABLES}
LAKE_TABLES = tuple(t.name for t in _TABLES if t.in_lake)
IMMUTABLE_WHEN_PUBLISHED = frozenset(t.name for t in _TABLES if t.frozen_when_published)


def table_docs() -> str:
    """Markdown documentation of the warehouse tables: name, grain, typed columns and key."""
    lines = ["| table | grain | columns (the key in bold) |", "| --- | --- | --- |"]
    for t in _TABLES:
        cols = ", ".join(f"{'**' + c.name + '**' if c.name in t.key else c.name} {c.type.lower()}" for c in t.columns)
        lines.append(f"| `{t.name}` | {t.grain} | {cols} |")
    return "\n".join(lines)
