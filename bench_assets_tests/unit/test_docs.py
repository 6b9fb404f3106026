"""The documentation as a reader of a clone meets it: the README stays a short guide, every link
resolves inside the repository (a file, and a heading where it names one), and the command
reference documents every `bench` command and option the parser offers."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from bench_assets.cli.main import build_parser
from bench_assets_tests.helpers import REPO

README_MAX_LINES = 250
DOCUMENTS = sorted(
    [
        REPO / "README.md",
        REPO / "CHANGELOG.md",
        REPO / "benchmarks" / "README.md",
        REPO / "deploy" / "README.md",
        *(REPO / "docs").glob("*.md"),
    ]
)
CLI_REFERENCE = REPO / "docs" / "cli.md"
_FENCE = re.compile(r"(?ms)^```.*?^```")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"(?m)^#{1,6} +(.+?) *$")


def prose(text: str) -> str:
    """The text without its fenced code blocks (whose brackets are not links)."""
    return _FENCE.sub("", text)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(h) for h in _HEADING.findall(prose(path.read_text(encoding="utf-8")))}


def test_the_readme_is_a_short_guide():
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; reference text belongs in docs/"


def broken_links(document: Path, root: Path = REPO) -> list[str]:
    """Each link of `document` that does not resolve to a file under `root` (and, where it names
    one, a heading of that file)."""
    broken = []
    for target in _LINK.findall(prose(document.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http(s):, mailto: ...: outside, by design
            continue
        file, _, anchor = target.partition("#")
        path = (document.parent / file).resolve() if file else document
        if not path.is_relative_to(root) or not path.exists():
            broken.append(f"{target}: no such file in the repository")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: no heading #{anchor} in {path.relative_to(root)}")
    return broken


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_resolves_inside_the_repository(document: Path):
    broken = broken_links(document)
    assert not broken, f"{document.relative_to(REPO)}: " + "; ".join(broken)


def test_a_link_outside_the_repository_a_missing_file_or_heading_is_found(tmp_path: Path):
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "DESIGN.md").write_text("# Design\n")
    (root / "docs" / "other.md").write_text("# The demo (`make demo`, `bench demo`)\n")
    doc = root / "docs" / "index.md"
    doc.write_text(
        "[ok](other.md#the-demo-make-demo-bench-demo) [web](https://example.com/) "
        "[brief](../../shared/DESIGN.md) [gone](missing.md) [heading](other.md#nope)\n"
        "```\n[in code](not-a-link.md)\n```\n"
    )
    assert broken_links(doc, root) == [
        "../../shared/DESIGN.md: no such file in the repository",
        "missing.md: no such file in the repository",
        "other.md#nope: no heading #nope in docs/other.md",
    ]
    assert slug("Figures behind the code's choices") == "figures-behind-the-codes-choices"


def help_text(args: tuple[str, ...]) -> str:
    """What `bench ARGS --help` prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        build_parser().parse_args([*args, "--help"])
    return out.getvalue()


def commands(path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """Every command the parser runs (`("review", "send")`, ...) with its help text."""
    text = help_text(path)
    if "COMMAND ..." not in text.split("\n\n")[0]:
        return [(path, text)]
    # the sub-commands, listed under COMMAND one per line, four spaces in
    names = re.findall(r"(?m)^ {4}([a-z][\w-]*)(?: |$)", text.split("\n  COMMAND\n", 1)[-1].split("\n\n")[0])
    return [c for name in names for c in commands((*path, name))]


def test_the_command_reference_documents_every_command_and_option():
    reference = CLI_REFERENCE.read_text(encoding="utf-8")
    found = commands()
    assert len(found) >= 15 and (("demo",) in dict(found))
    missing = []
    for path, text in found:
        name = "bench " + " ".join(path)
        heading = re.search(rf"(?m)^### `{re.escape(name)}[` ].*$", reference)
        if not heading:
            missing.append(f"{name}: no '### `{name} …`' section")
            continue
        section = reference[heading.start() :].split("\n#", 1)[0]
        options = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text)) - {"--help"}
        missing += [f"{name} {option}" for option in sorted(options) if option not in section]
    assert not missing, f"{CLI_REFERENCE.relative_to(REPO)} lacks: " + "; ".join(missing)
