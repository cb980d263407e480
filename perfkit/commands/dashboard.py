"""`perfkit dashboard [--db URL] [--port N]`: the team's view of the results store (Streamlit).

Pages: Overview (latest runs per GPU and spec, open regressions first), History (a metric over
commits per GPU with noise bands and change points), Compare (two runs: verdicts and kernel
diff), Roofline, Kernels (top kernels, launch overhead, idle; trace download) and Run.
The store is read, never written. The server listens on 127.0.0.1 unless --host says otherwise.
`--demo` builds (once, then reuses) a demo store and serves it: a small git repository made
commit by commit, each commit profiled on this CPU with `perfkit profile --repo`; one commit
really slows a code path, so History, Overview and Compare have a regression to show.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from perfkit.commands._store_args import add_db
from perfkit.commands._types import tcp_port

DEFAULT_PORT = 8501
DEFAULT_HOST = "127.0.0.1"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "dashboard", help="serve the dashboard (Streamlit) over the results store",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_db(p)
    p.add_argument("--port", type=tcp_port, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})")
    p.add_argument("--host", default=DEFAULT_HOST,
                   help=f"address to bind (default {DEFAULT_HOST}: this machine only; 0.0.0.0 shares it)")
    p.add_argument("--runs", type=Path, action="append", default=None, metavar="DIR",
                   help="where run directories live, for traces and kernel tables (repeatable; default ./runs)")
    p.add_argument("--demo", action="store_true",
                   help="serve a demo store: real CPU runs of the commits of a small demo git repository "
                        "(12 profile runs, built once, then reused)")
    p.add_argument("--demo-dir", type=Path, default=None,
                   help="where the demo store lives (default: $PERFKIT_HOME/demo, i.e. ~/.cache/perfkit/demo)")
    p.add_argument("--rebuild-demo", action="store_true", help="build the demo store again")
    return p


def streamlit_command(host: str, port: int) -> list[str]:
    app = Path(__file__).parents[1] / "dashboard" / "app.py"  # perfkit/dashboard/app.py
    return [sys.executable, "-m", "streamlit", "run", str(app), "--server.address", host,
            "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
            "--server.fileWatcherType", "none", "--client.toolbarMode", "viewer"]  # no "Deploy" button


def dashboard_env(db_url: str, runs: list[Path], demo_label: str | None) -> dict[str, str]:
    env = {**os.environ, "PERFKIT_DB": db_url, "PERFKIT_RUNS": os.pathsep.join(str(r.resolve()) for r in runs)}
    env.pop("PERFKIT_DASHBOARD_DEMO", None)
    if demo_label:
        env["PERFKIT_DASHBOARD_DEMO"] = demo_label
    return env


def run(args: argparse.Namespace) -> int:
    import importlib.util

    from perfkit.core.errors import EXIT_OK, SpecError
    from perfkit.store.engine import check_sqlite_file
    from perfkit.store.url import check_persistent, normalize_db_url, sqlite_path

    if importlib.util.find_spec("streamlit") is None:
        raise SpecError("the dashboard needs streamlit: pip install 'perfkit[dashboard]'")
    runs = list(args.runs or [Path("runs")])
    label = None
    db_url = normalize_db_url(args.db) if args.demo else check_persistent(args.db, writing=False)
    path = sqlite_path(db_url)
    if path is not None and not args.demo:  # a directory or a foreign file: one line, before the server starts
        check_sqlite_file(path)
    if args.demo:
        from perfkit.dashboard.demo import build

        demo = build(args.demo_dir, rebuild=args.rebuild_demo)
        db_url, label = demo.db_url, demo.label
        runs = [demo.runs_dir, *(args.runs or [])]
    print(f"perfkit: dashboard on http://{args.host}:{args.port} (store {db_url}); Ctrl-C stops it", flush=True)
    proc = subprocess.Popen(streamlit_command(args.host, args.port), env=dashboard_env(db_url, runs, label))
    previous = signal.signal(signal.SIGTERM, _interrupt)  # a terminated perfkit stops its server too
    try:
        proc.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return EXIT_OK if proc.returncode in (0, -2, -15) else int(proc.returncode)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
