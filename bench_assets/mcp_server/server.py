"""The MCP server of one published snapshot (the official `mcp` SDK's `MCPServer`): three read-only
tools over `published.PublishedSnapshot`, served over stdio or streamable HTTP."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from bench_assets.mcp_server.published import OVERLAP_RULE, PAIRED_RULE, PublishedSnapshot, QueryError

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


def build_server(snapshot: PublishedSnapshot) -> MCPServer:
    """The server: `recommend`, `vendor_figures` and `row_verdicts`, each answering from the
    snapshot's published files only; a question they cannot answer is a tool error that says why."""
    server: MCPServer = MCPServer(
        name="bench",
        title=f"bench · {snapshot.snapshot_id}",
        instructions=(
            f"Verdicts of the bench benchmark of web-search and extraction APIs, snapshot {snapshot.snapshot_id} "
            f"(mode {snapshot.board.get('mode')}), read from its published files. Start with recommend(); "
            f"task types: {', '.join(snapshot.task_types())}."
        ),
        log_level="WARNING",
    )

    def answer(question: Any, *args: Any) -> dict[str, Any]:
        try:
            return question(*args)
        except QueryError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(
        annotations=READ_ONLY,
        description=(
            "Which search/extraction API configurations to use for a task type, from the published snapshot "
            f"{snapshot.snapshot_id}: the best and every configuration that cannot be told apart from it, each with its "
            "figure and 95 % interval, its correct rate, cost per correct and $ per 1,000 correct (with intervals), its "
            "rank range, headline eligibility and evidence links (the vendor's published page and JSON, "
            "leaderboard.json/.csv, pairwise.csv, public_row_scores.csv). "
            f"task_type: one of {', '.join(snapshot.task_types())} ({snapshot.family!r}: the snapshot's ranking "
            "figure; the others one task type each); an unknown one is an error listing these. "
            "budget_usd_per_1k: keep only configurations whose $ per 1,000 correct answers is at most this; the best "
            "is then the best of those. stratum: rank on the published per-stratum figures (the answer says when "
            f"none are published). Rule on the ranking figure: {PAIRED_RULE}. Where no paired comparison is "
            f"published (a stratum, a single task type): {OVERLAP_RULE}. The answer names the rule it applied."
        ),
    )
    def recommend(task_type: str, budget_usd_per_1k: float | None = None, stratum: str | None = None) -> dict[str, Any]:
        return answer(snapshot.recommend, task_type, budget_usd_per_1k, stratum)

    @server.tool(
        annotations=READ_ONLY,
        description=(
            f"One vendor's figures in snapshot {snapshot.snapshot_id} as published in leaderboard.json: every metric "
            "with its n and 95 % interval, per-stratum/task-type/split breakdowns, rank range, headline eligibility "
            "and reasons, response classes, and every paired comparison it is part of; with links to its pages. "
            "An unknown vendor is an error listing the known ones."
        ),
    )
    def vendor_figures(vendor: str) -> dict[str, Any]:
        return answer(snapshot.vendor_figures, vendor)

    @server.tool(
        annotations=READ_ONLY,
        description=(
            f"Every vendor's verdict on one public row of snapshot {snapshot.snapshot_id} as published "
            "(public_row_scores.csv: response class, correct, hit@k, fidelity, answer score, billed $, latency), "
            "with the row's golden task (public_split.jsonl) and its query page. vendor: only that vendor's verdict. "
            "Holdout rows are never published, so they are unknown here."
        ),
    )
    def row_verdicts(row_id: str, vendor: str | None = None) -> dict[str, Any]:
        return answer(snapshot.row_verdicts, row_id, vendor)

    return server
