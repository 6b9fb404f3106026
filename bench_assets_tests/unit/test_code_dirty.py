"""The published `code.dirty` flag says whether the code had uncommitted changes, not whether a run
wrote its own output into the checkout (the public split, replies, errata versions, sentinel pages)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench_assets.fetch.versions import code_version


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.org", "-c", "user.name=t", *args], check=True)


def write(path: Path, text: str = "x\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_what_a_run_writes_into_the_checkout_does_not_make_the_code_dirty(tmp_path):
    repo = tmp_path / "clone"
    write(repo / "bench_assets" / "engine.py")
    write(repo / "data" / "snapshots" / "web_search-2026-q4" / "manifest.yaml")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    package = repo / "bench_assets"
    assert code_version(package)["dirty"] is False

    snapshot = repo / "data" / "snapshots" / "web_search-2026-q4"
    write(snapshot / "public_split.jsonl", '{"id": "r1"}\n')  # the split a run exports (untracked)
    write(snapshot / "replies" / "exa.md")  # a vendor's reply, filed by `bench review reply`
    write(repo / "data" / "snapshots" / "web_search-2026-q4-e1" / "manifest.yaml")  # an errata version
    write(repo / "data" / "sentinels" / "web_search-2026-q4" / "s1.html")  # sentinel pages to deploy
    code = code_version(package)
    assert code["dirty"] is False and "changes_sha256" not in code

    write(repo / "data" / "snapshots" / "web_search-2027-q1" / "manifest.yaml")  # an operator's uncommitted manifest
    assert code_version(package)["dirty"] is True
    (repo / "data" / "snapshots" / "web_search-2027-q1" / "manifest.yaml").unlink()
    write(repo / "bench_assets" / "engine.py", "changed\n")  # a code change
    code = code_version(package)
    assert code["dirty"] is True and len(code["changes_sha256"]) == 64
