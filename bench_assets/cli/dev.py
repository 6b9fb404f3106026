"""`make dev`: `dagster dev` (UI, daemon, code server) on this bench home, quiet to start and
stopped by Ctrl-C or SIGTERM.

`python -m bench_assets.cli.dev [--host H] [--port P]` sets up, then becomes `dagster dev`:

- Signals. A program started in the background by a shell without job control (`make dev &`, a
  script, a supervisor) inherits SIGINT *ignored*, and `dagster dev` copies SIGINT's handler onto
  SIGTERM: both are then ignored and only SIGKILL stops it, leaving its webserver, daemon and code
  server behind. SIGINT and SIGTERM are set back to their defaults before `dagster dev` starts, so
  either stops it and its children cleanly.
- Warnings. `dagster dev` warns that a `dagster.yaml` in the current folder is not used when
  $DAGSTER_HOME is elsewhere, although `make dev` copies that very file into $DAGSTER_HOME; it runs
  in $DAGSTER_HOME instead (the bench home is passed as $BENCH_HOME, and `.env` is read as every
  bench command reads it: `cli.main.load_env_file`). Its notice that `dagster dev` is superseded by
  `dg dev` names a tool this project does not install (dagster-dg-cli): that one warning is not shown.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
from pathlib import Path

from bench_assets.cli.home import bench_home
from bench_assets.cli.main import load_env_file

# The start of the one warning not shown (Python's -W/PYTHONWARNINGS match a message's start).
SUPERSEDED_NOTICE = "Function `dev_command` is superseded"


def dev_environment(environ: dict[str, str], home: Path) -> dict[str, str]:
    """The environment `dagster dev` runs with: the bench home, the superseded notice filtered."""
    warnings = [w for w in environ.get("PYTHONWARNINGS", "").split(",") if w]
    return {
        **environ,
        "BENCH_HOME": environ.get("BENCH_HOME") or str(home),
        "PYTHONWARNINGS": ",".join([*warnings, f"ignore:{SUPERSEDED_NOTICE}"]),
    }


def dev_command(dagster: str, host: str, port: int, workspace: Path) -> list[str]:
    return [dagster, "dev", "-h", host, "-p", str(port), "-w", str(workspace)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench_assets.cli.dev", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3000)
    parser.add_argument("--workspace", type=Path, default=Path("workspace.yaml"))
    args = parser.parse_args(argv)
    workspace = args.workspace.resolve()  # before moving into $DAGSTER_HOME
    load_env_file()
    home = bench_home()
    dagster_home = Path(os.environ.get("DAGSTER_HOME") or home / ".dagster_home").resolve()
    dagster_home.mkdir(parents=True, exist_ok=True)
    dagster = shutil.which("dagster", path=str(Path(sys.executable).parent)) or shutil.which("dagster")
    if dagster is None:
        raise SystemExit("dagster is not installed in this environment: run `make setup`")
    env = {**dev_environment(dict(os.environ), home), "DAGSTER_HOME": str(dagster_home)}
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)  # kept across exec: dagster dev installs its handlers
    os.chdir(dagster_home)
    os.execve(dagster, dev_command(dagster, args.host, args.port, workspace), env)


if __name__ == "__main__":
    main()
