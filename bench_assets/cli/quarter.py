"""`bench quarter next SNAPSHOT`: the next quarter drawn from a snapshot, through Dagster (the
`next_quarter` asset, so the run is in the UI like any other), then what was drawn."""

from __future__ import annotations

import argparse

from bench_assets.cli.help import fit


def add_quarter_commands(sub: argparse._SubParsersAction, snapshot_arg) -> None:
    """`bench quarter next`: its parser (main.py calls this, so its lines stay here)."""
    quarter = sub.add_parser("quarter", help="the quarterly cycle: draw the next quarter from the last")
    quarter_sub = quarter.add_subparsers(dest="quarter_command", required=True)
    nxt = quarter_sub.add_parser(
        "next",
        help="draw the next quarter from SNAPSHOT (rotation, replacements, next manifest); refuses when a pool falls short",
    )
    nxt.add_argument("snapshot", type=snapshot_arg, help="the quarter drawn from, e.g. web_search-2026-q3")
    nxt.set_defaults(command="quarter:cmd_quarter_next", holds="snapshot")


def cmd_quarter_next(args: argparse.Namespace) -> int:
    # imported here: `bench --help` imports this module's parser and must not load Dagster
    from bench_assets.cli.runs import ensure_dagster_home, materialize, register_snapshot, why_it_failed

    ensure_dagster_home()
    register_snapshot(args.snapshot)
    result = materialize(("next_quarter",), args.snapshot, "bench quarter next")
    if not result.success:
        print(fit(f"bench: the next quarter was not drawn from {args.snapshot}:\n{why_it_failed(result)}"))
        return 1
    meta = {k: v.value for k, v in result.asset_materializations_for_node("next_quarter")[0].metadata.items()}
    nxt = meta["next_snapshot"]
    print(fit(f"{nxt} drawn from {args.snapshot}: {meta['carried_over']} rows carried over, {meta['new_rows']} new"))
    if not meta["biased_by_scores"]:
        print(fit(f"  ({args.snapshot} has no scores yet: the rotation was not biased toward saturated strata)"))
    print(fit(str(meta["rotation_by_stratum"])))
    if meta.get("to_renew"):
        print(
            fit(
                f"  not carried over, dated evidence of {args.snapshot}: {meta['to_renew']} "
                f"(run the trials again for {nxt} and enter them in data/snapshots/{nxt}/)"
            )
        )
    print(fit(f"review the manifest (vendors, plans, prices carried over): {meta['manifest']}"))
    print(fit(f"the rotation plan (private: it names holdout rows): {meta['plan_file']}"))
    print(fit(f"then run it: bench demo --snapshot {nxt} (simulated), or materialize partition {nxt} in the UI"))
    return 0
