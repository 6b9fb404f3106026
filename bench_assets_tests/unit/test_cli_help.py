"""`bench` as a user meets it before running anything: every command's `--help` describes it and
shows an example, `bench --version` names the installed version, and nothing it prints (help, a
refused argument) runs past 100 columns, even on a wide terminal. Each is the installed `bench`
script run in a process of its own. (What long commands print while they work is checked by the
tests that run them: test_one_run_at_a_time.py for `bench demo`, test_snapshot_e2e.py for
`bench rescore`.)"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from bench_assets.cli.help import WIDTH, fit
from bench_assets.cli.progress import shown_path
from bench_assets_tests.unit.test_docs import commands

BENCH = str(Path(sys.executable).parent / "bench")


def run_all(argvs: list[list[str]], cwd: Path, **env: str) -> list[subprocess.CompletedProcess]:
    """Each `bench ARGV` in a process of its own, all at once, on a 240-column terminal."""
    environment = {**os.environ, "COLUMNS": "240", **env}
    procs = [
        subprocess.Popen(
            [BENCH, *argv], cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for argv in argvs
    ]
    done = []
    for argv, proc in zip(argvs, procs):
        out, err = proc.communicate(timeout=120)
        done.append(subprocess.CompletedProcess([BENCH, *argv], proc.returncode, out, err))
    return done


def too_wide(text: str) -> list[str]:
    return [f"{len(line)}: {line}" for line in text.splitlines() if len(line) > WIDTH]


def test_every_command_has_a_description_and_an_example_within_100_columns(tmp_path):
    paths = [(), *sorted({p[:i] for p, _ in commands() for i in range(1, len(p) + 1)})]
    assert len(paths) >= 20
    for result in run_all([[*path, "--help"] for path in paths], tmp_path):
        name = " ".join(result.args[1:-1]) or "bench"
        assert result.returncode == 0, result.stderr
        usage, description, *_ = result.stdout.split("\n\n")
        assert usage.startswith("usage: bench") and len(description.split()) >= 8, f"{name}: {description!r}"
        assert not description.startswith(("positional arguments:", "options:")), f"{name} has no description"
        examples = result.stdout.split("\nexamples:\n", 1)[-1]
        assert "\nexamples:\n" in result.stdout and examples.startswith("  "), f"{name} has no examples"
        assert any(" bench " in f" {line} " for line in examples.splitlines()), f"{name}: {examples!r}"
        assert too_wide(result.stdout) == [], name


def test_version_is_the_installed_package_version(tmp_path):
    (result,) = run_all([["--version"]], tmp_path)
    assert result.returncode == 0 and result.stdout == f"bench {version('bench')}\n"


def test_refused_arguments_are_said_within_100_columns(tmp_path):
    home = tmp_path / "a-rather-long-home-directory-name" / "where-the-operator-keeps-the-bench"
    (home / "data" / "snapshots" / "web_search-2026-q3").mkdir(parents=True)
    (home / "data" / "snapshots" / "web_search-2026-q3" / "manifest.yaml").write_text("snapshot_id: x\n")
    results = run_all(
        [
            ["rescore", "nosuch-2026-q1"],
            ["demo", "--workers", "0"],
            ["review", "status"],
            ["frobnicate"],
        ],
        home,
        BENCH_HOME=str(home),
    )
    for result in results:
        assert result.returncode == 2, result
        assert result.stdout == "" and too_wide(result.stderr) == [], result.stderr
    # the manifest it looked for, relative to where the user is
    assert "no data/snapshots/nosuch-2026-q1/manifest.yaml" in results[0].stderr.replace("\n  ", " ")


def test_a_long_line_is_wrapped_at_spaces_keeping_its_indentation():
    line = "  " + " ".join(["word"] * 40)
    wrapped = fit(line, width=30).splitlines()
    assert all(len(w) <= 30 for w in wrapped) and len(wrapped) > 1
    assert wrapped[0].startswith("  word") and all(w.startswith("    word") for w in wrapped[1:])
    assert " ".join(w.strip() for w in wrapped) == line.strip()  # nothing lost
    assert fit("short\n\nlines", width=30) == "short\n\nlines"
    url = "https://example.com/" + "a" * 120
    assert fit(f"see {url}", width=30).splitlines() == ["see", f"  {url}"]  # a word is never cut


def test_a_path_is_shown_relative_to_where_the_user_is(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert shown_path(tmp_path / "data" / "publish" / "index.html") == "data/publish/index.html"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path / "..")
    assert shown_path(tmp_path / "home" / "site" / "index.html").endswith("home/site/index.html")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert shown_path(tmp_path / "home" / "x") == "~/x"
    assert shown_path(Path("/usr/lib")) == "/usr/lib"


@pytest.mark.parametrize("forced, shown", [("1", True), ("0", False), ("", False)])
def test_bars_are_off_without_a_terminal_unless_forced(monkeypatch, forced, shown):
    from bench_assets.cli.progress import bars_shown

    monkeypatch.setenv("BENCH_PROGRESS", forced)
    assert bars_shown() is shown  # pytest's stderr is not a terminal
