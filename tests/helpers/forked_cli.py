"""`python -m perfkit ARGS` (or `python -m MODULE ARGS`) as a process, ~10x sooner: a fork server
for the tests that run many short commands (tests/commands/test_hostile_inputs.py: a hundred CLI
commands; tests/benchmarks/test_smoke*.py: each benchmark's smoke run).

A Python process with perfkit's CLI imported once forks a child per command. The child is a
real process: its own working directory, environment, stdin (/dev/null), stdout and stderr
(files), exit code, and a crash (a segfault, a runaway recursion) ends only it. It runs
perfkit/__main__.py (or MODULE) as `python -m` does (runpy, `__main__`, sys.argv[0] its path),
and ends as an interpreter does (its threads joined, atexit run). What a fresh interpreter gives
and a fork does not: modules imported anew (the CLI's own import-time work is checked by the
startup tests, not here), a peak RSS of its own (ru_maxrss counts the server's).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

SERVER = r'''
import importlib, json, os, runpy, signal, sys, time
import perfkit.cli  # imported once: each child starts from here
for name in sys.argv[1:]:  # and what the commands import (a fork copies it for free)
    importlib.import_module(name)


def child(job):
    os.chdir(job["cwd"])
    os.environ.clear()
    os.environ.update(job["env"])
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    for fd, path in ((1, job["out"]), (2, job["err"])):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # as Python's own stderr
    sys.argv = ["-m", *job["argv"]]
    code = 0
    try:
        runpy.run_module(job["module"], run_name="__main__", alter_sys=True)
    except SystemExit as exc:  # what the interpreter does with it
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    import atexit, threading
    threading._shutdown()  # what an interpreter does at its end: wait for its threads, run atexit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    return code


def wait(pid, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.002)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def stop(pid, timeout_s):
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    return wait(pid, timeout_s)


for line in sys.stdin:
    job = json.loads(line)
    if job.get("op") == "stop":  # a spawned child: SIGTERM, SIGKILL after timeout_s; its exit code
        sys.stdout.write(json.dumps({"rc": stop(job["pid"], job["timeout_s"])}) + "\n")
        sys.stdout.flush()
        continue
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = child(job)
        except BaseException:
            import traceback
            traceback.print_exc()
            sys.stderr.flush()  # os._exit below drops what is buffered
        finally:
            os._exit(code if isinstance(code, int) else 1)
    if job.get("op") == "spawn":  # runs on: its pid now, `stop` later
        sys.stdout.write(json.dumps({"pid": pid}) + "\n")
    else:
        sys.stdout.write(json.dumps({"rc": wait(pid, job["timeout_s"])}) + "\n")
    sys.stdout.flush()
'''


# Heavy libraries the commands import, loaded before the first fork. torch starts no thread on
# import (its OpenMP pool starts on first use), so forking after it is safe.
PRELOAD = ("numpy", "pandas", "pyarrow.parquet", "sqlalchemy", "pydantic", "yaml", "torch")


@dataclass(frozen=True)
class Result:
    returncode: int | None  # None: killed at the timeout; negative: the signal that ended it
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Spawned:
    """A child left running by ForkedCli.spawn: its pid and the files its stdout and stderr go to."""
    pid: int
    out: Path
    err: Path

    def running(self) -> bool:
        """Not yet ended (a child that ended stays a zombie of the server until `stop`)."""
        try:
            return Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return False


class ForkedCli:
    """One fork server; `run` is `subprocess.run([python, -m, perfkit, *argv], cwd, env)`."""

    def __init__(self, env: dict[str, str], preload: tuple[str, ...] = PRELOAD) -> None:
        self._proc = subprocess.Popen([sys.executable, "-c", SERVER, *preload], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True, env=env, cwd=REPO)
        self._files = Path(tempfile.mkdtemp(prefix="perfkit-forked-cli-"))  # not in the command's folder
        self._spawned = 0

    def run(self, argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float = 120.0,
            module: str = "perfkit") -> Result:
        """`python -m MODULE ARGV` (by default `python -m perfkit`), run in `cwd` with `env`."""
        out, err = self._files / "stdout", self._files / "stderr"
        job = {"module": module, "argv": argv, "cwd": str(cwd), "env": env, "out": str(out), "err": str(err),
               "timeout_s": timeout_s}
        rc = self._ask(job)["rc"]
        result = Result(rc, out.read_text(errors="replace"), err.read_text(errors="replace"))
        out.unlink()
        err.unlink()
        return result

    def spawn(self, argv: list[str], cwd: Path, env: dict[str, str], module: str = "perfkit") -> Spawned:
        """`python -m MODULE ARGV` started and left running (a server): its stdout and stderr go
        to files that the caller reads while it runs; `stop` ends it."""
        self._spawned += 1
        out, err = self._files / f"spawned-{self._spawned}.out", self._files / f"spawned-{self._spawned}.err"
        job = {"op": "spawn", "module": module, "argv": argv, "cwd": str(cwd), "env": env, "out": str(out),
               "err": str(err), "timeout_s": 0}
        return Spawned(self._ask(job)["pid"], out, err)

    def stop(self, child: Spawned, timeout_s: float = 5.0) -> int | None:
        """SIGTERM to a spawned child, SIGKILL after `timeout_s`: its exit code (None: killed)."""
        rc = self._ask({"op": "stop", "pid": child.pid, "timeout_s": timeout_s})["rc"]
        return rc if rc is None else int(rc)

    def _ask(self, job: dict[str, object]) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(job) + "\n")
        self._proc.stdin.flush()
        reply = self._proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"the perfkit fork server ended (exit {self._proc.poll()})")
        return dict(json.loads(reply))

    def close(self) -> None:
        """End the server: it holds nothing to save, so no interpreter shutdown to wait for (seconds with torch)."""
        self._proc.kill()
        self._proc.wait()
        for pipe in (self._proc.stdin, self._proc.stdout):
            if pipe is not None:
                pipe.close()
        shutil.rmtree(self._files, ignore_errors=True)


def cli_env() -> dict[str, str]:
    """This process's environment as a `python -m perfkit` subprocess would get it from a test:
    one OpenMP thread, the repository first on PYTHONPATH."""
    return {**os.environ, "OMP_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}



_SHARED: list[ForkedCli] = []  # this test process's one server for run_perfkit, started on first use


def run_perfkit(argv: list[str], cwd: Path | str, env: dict[str, str] | None = None,
                timeout_s: float = 300.0) -> Result:
    """`subprocess.run([python, -m, perfkit, *argv], capture_output=True, text=True, cwd=cwd,
    env=env)` for the tests, forked from one server per test process (~0.05 s instead of ~2 s;
    the server ends with the process). `env` None: this process's environment at the call
    (monkeypatch applies, as it would to a subprocess), with cli_env's PYTHONPATH and one thread.
    stdin is /dev/null. A run past `timeout_s` is killed: returncode None."""
    return shared_server().run([str(a) for a in argv], Path(cwd), cli_env() if env is None else env,
                               timeout_s=timeout_s)


def shared_server() -> ForkedCli:
    """This test process's fork server (run_perfkit, tests/helpers/serving_server.running_server),
    started at the start of the session (tests/conftest.py: it imports while the tests are
    collected) or on first use, and ended with the process."""
    if not _SHARED:
        _SHARED.append(ForkedCli(cli_env()))
        atexit.register(_SHARED[0].close)
    return _SHARED[0]
