"""`bench mcp`: an MCP server over one published snapshot's files (bench_assets.mcp_server), on
stdio (what a desktop client launches) or streamable HTTP."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench_assets.cli.home import bench_home
from bench_assets.errors import BenchInputError
from bench_assets.mcp_server.published import PublishedSnapshot, QueryError, newest_published


def tcp_port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (1-65535)")
    return int(text)


def add_mcp_command(sub: argparse._SubParsersAction) -> None:
    mcp = sub.add_parser(
        "mcp",
        help="serve a published snapshot's verdicts to agents over MCP (stdio, or streamable HTTP with --http)",
    )
    where = mcp.add_mutually_exclusive_group()
    where.add_argument("--snapshot", help="a snapshot published in the home (default: the newest under data/publish/)")
    where.add_argument("--dir", help="a published snapshot folder anywhere, e.g. a downloaded copy")
    mcp.add_argument("--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp, not stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="with --http: the address to listen on (default 127.0.0.1)")
    mcp.add_argument("--port", type=tcp_port, default=8780, help="with --http: the port (default 8780)")
    mcp.add_argument(
        "--base-url", help="where the published folder is served: evidence links become URLs under it, not paths"
    )
    mcp.set_defaults(command="mcp:cmd_mcp")


def published_folder(args: argparse.Namespace) -> Path:
    publish_root = bench_home() / "data" / "publish"
    try:
        if args.dir:
            return Path(args.dir)
        if args.snapshot:
            folder = publish_root / args.snapshot
            if not (folder / "leaderboard.json").is_file():
                known = sorted(p.parent.name for p in publish_root.glob("*/leaderboard.json"))
                raise QueryError(f"snapshot {args.snapshot!r} is not published (known: {', '.join(known) or 'none'})")
            return folder
        return newest_published(publish_root)
    except QueryError as exc:
        raise BenchInputError("--snapshot", [(None, "snapshot", str(exc))]) from None


def cmd_mcp(args: argparse.Namespace) -> int:
    from bench_assets.mcp_server.server import build_server  # the SDK loads only when a server starts

    try:
        snapshot = PublishedSnapshot(published_folder(args), base_url=args.base_url)
    except QueryError as exc:
        raise BenchInputError(args.dir or "--snapshot", [(None, "leaderboard.json", str(exc))]) from None
    server = build_server(snapshot)
    # stdout is the protocol's on stdio: what the operator reads goes to stderr
    where = f"http://{args.host}:{args.port}/mcp" if args.http else "stdio"
    print(f"bench mcp: snapshot {snapshot.snapshot_id} ({snapshot.folder}) on {where}", file=sys.stderr, flush=True)
    if args.http:
        server.run("streamable-http", host=args.host, port=args.port)
    else:
        server.run("stdio")
    return 0
