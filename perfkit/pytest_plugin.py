"""pytest plugin (registered through the `pytest11` entry point): the `perfbench` fixture.

    def test_rmsnorm_speed(perfbench):
        x = torch.randn(64, 4096)
        m = perfbench(torch.nn.functional.rms_norm, x, (4096,))
        assert m.median_s < 1e-3

Options:
  --perfkit-out DIR            write a perfkit run directory DIR/<run_id>/run.json with one
                               point (kind "pytest") per perfbench call: `perfkit ingest`,
                               `perfkit compare` and `perfkit gate` read it like a profile run
  --perfkit-baseline RUN       a run directory (or run.json) written by --perfkit-out earlier:
                               at the end of the session the gate compares this session's
                               measurements with that run (perfkit.comparison.baseline: what
                               `perfkit gate --baseline RUN --candidate <this run> --history 0`
                               decides with min_effect = --perfkit-max-slowdown), prints each
                               measurement's verdict in the gate's words (regressed, improved,
                               unchanged, noisy, suspect, inconclusive, incomparable) and fails
                               the session (exit 1) when any measurement regressed
  --perfkit-max-slowdown F     allowed slowdown: the gate's min_effect (default 0.10 = 10%)
  --perfkit-name NAME          the run's name in the store (default: pytest-<rootdir name>)
  --perfkit-threads N          torch intra-op threads for every perfbench call that does not
                               pass threads= itself (default: perfkit.bench's: 1 on a CPU,
                               torch's own count on a GPU); the caller's count is restored after
                               each call, and the count used is the measurement's extra["threads"]

Every pytest run where perfkit is installed loads this module, so it imports only pytest, the
standard library and perfkit/__init__ (which imports perfkit.core.version alone): perfkit.api,
the pipeline, profiler/, reports/, workloads/ and torch are imported inside the functions that
need them, on the first perfbench call or at the end of a session that recorded one
(--perfkit-baseline reads the baseline's run record, core only, when given; the gate runs at
the end of a session that recorded a measurement).
tests/perfkit/test_pytest_plugin.py checks this; benchmarks/pytest_plugin_import.py measures what the plugin adds to a plain run.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from perfkit.core.measurement import Measurement
    from perfkit.core.record import PointResult, Run

KIND = "pytest"


@dataclass
class Recorded:
    nodeid: str
    label: str
    measurement: Measurement
    cost: tuple[float, float] | None
    checked: bool = False  # judged against the baseline at the end of the session
    max_slowdown: float | None = None  # this call's own allowed slowdown (None: the session's)
    verdict: str | None = None  # the gate's verdict line, when a baseline was compared


@dataclass
class PerfSession:
    out_dir: Path | None
    baseline_path: Path | None
    max_slowdown: float
    name: str
    rootdir: Path
    threads: int | None = None
    records: list[Recorded] = field(default_factory=list)
    outcomes: dict[str, str] = field(default_factory=dict)
    written: Path | None = None
    write_error: str | None = None
    gate_status: str | None = None  # the gate's headline against the baseline
    gate_failed: bool = False
    _baseline: Run | None = None

    def baseline(self) -> Run:
        """The baseline's run record (PerfkitError when it cannot be read)."""
        if self._baseline is None:
            from perfkit.core.record import load_run

            assert self.baseline_path is not None
            self._baseline = load_run(self.baseline_path)
        return self._baseline


SESSION_KEY = pytest.StashKey[PerfSession]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("perfkit", "perfkit performance measurements (perfbench fixture)")
    group.addoption("--perfkit-out", metavar="DIR", default=None,
                    help="write the perfbench measurements as a perfkit run under DIR/<run_id>/")
    group.addoption("--perfkit-baseline", metavar="RUN", default=None,
                    help="gate the perfbench measurements against this run (directory or run.json): "
                         "exit 1 when one regressed")
    group.addoption("--perfkit-max-slowdown", metavar="F", type=float, default=0.10,
                    help="allowed slowdown against the baseline: the gate's min_effect (default 0.10)")
    group.addoption("--perfkit-name", metavar="NAME", default=None,
                    help="name of the run written by --perfkit-out (default pytest-<rootdir>)")
    group.addoption("--perfkit-threads", metavar="N", type=int, default=None,
                    help="torch threads while perfbench times (default 1 on a CPU; threads= overrides)")


def pytest_configure(config: pytest.Config) -> None:
    invocation = Path(config.invocation_params.dir)

    def path_opt(name: str) -> Path | None:
        value = config.getoption(name)
        return (invocation / value) if value else None

    rootdir = Path(config.rootpath)
    max_slowdown = float(config.getoption("--perfkit-max-slowdown"))
    if max_slowdown < 0:
        raise pytest.UsageError(f"--perfkit-max-slowdown is {max_slowdown}; it must be >= 0")
    threads = config.getoption("--perfkit-threads")
    if threads is not None and not 1 <= threads <= 1024:
        raise pytest.UsageError(f"--perfkit-threads is {threads}; it must be from 1 to 1024")
    perf = PerfSession(
        out_dir=path_opt("--perfkit-out"),
        baseline_path=path_opt("--perfkit-baseline"),
        max_slowdown=max_slowdown,
        name=config.getoption("--perfkit-name") or f"pytest-{rootdir.name}",
        rootdir=rootdir,
        threads=threads,
    )
    if perf.baseline_path is not None:
        from perfkit.core.errors import PerfkitError

        try:
            perf.baseline()
        except PerfkitError as exc:
            raise pytest.UsageError(f"--perfkit-baseline: {exc}") from None
    config.stash[SESSION_KEY] = perf


class PerfBench:
    """The `perfbench` fixture: call it like `perfkit.bench`; each call is recorded."""

    def __init__(self, session: PerfSession, nodeid: str) -> None:
        self._session = session
        self._nodeid = nodeid
        self._labels: dict[str, int] = {}
        self.measurements: list[Measurement] = []

    def __call__(
        self,
        fn: Any,
        *args: Any,
        label: str | None = None,
        cost: Any = None,
        baseline: bool = True,
        max_slowdown: float | None = None,
        **options: Any,
    ) -> Measurement:
        """Time `fn(*args)`; options are perfkit.bench's (kwargs, device, threads, budget_s, ...).

        label names the measurement within the test (default: fn's name); cost is
        (flop, bytes) or a perfkit.core.cost.Cost; baseline=False leaves it out of the baseline
        check; max_slowdown overrides --perfkit-max-slowdown for it.
        """
        from perfkit.api import bench

        name = self._unique(label or getattr(fn, "__qualname__", None) or type(fn).__name__)
        if self._session.threads is not None:
            options.setdefault("threads", self._session.threads)
        m = bench(fn, *args, label=name, **options)
        self.measurements.append(m)
        checked = baseline and self._session.baseline_path is not None
        self._session.records.append(Recorded(self._nodeid, name, m, _as_cost(cost), checked, max_slowdown))
        return m

    def _unique(self, label: str) -> str:
        count = self._labels.get(label, 0) + 1
        self._labels[label] = count
        return label if count == 1 else f"{label}#{count}"


def _as_cost(cost: Any) -> tuple[float, float] | None:
    if cost is None:
        return None
    if isinstance(cost, tuple | list) and len(cost) == 2:
        return float(cost[0]), float(cost[1])
    return float(cost.flop), float(cost.bytes)


def point_key_of(rec: Recorded) -> str:
    from perfkit.workloads.base import point_key

    return point_key(KIND, rec.nodeid, {"bench": rec.label})


@pytest.fixture
def perfbench(request: pytest.FixtureRequest) -> PerfBench:
    """Time callables with perfkit's timer; see perfkit.pytest_plugin."""
    return PerfBench(request.config.stash[SESSION_KEY], request.node.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report = outcome.get_result()
    session = item.config.stash.get(SESSION_KEY, None)
    if session is not None and (report.when == "call" or report.outcome != "passed"):
        session.outcomes[item.nodeid] = report.outcome


def session_points(session: PerfSession) -> tuple[PointResult, ...]:
    """One point per perfbench call, with its test's outcome and its baseline verdict."""
    from perfkit.core.cost import Cost
    from perfkit.core.record import STATUS_OK, PointResult

    points = []
    for rec in session.records:
        metrics: dict[str, Any] = {"test_outcome": session.outcomes.get(rec.nodeid, "unknown")}
        if rec.verdict:
            metrics["baseline"] = rec.verdict
        points.append(PointResult(
            key=point_key_of(rec), kind=KIND, workload=rec.nodeid, params={"bench": rec.label},
            status=STATUS_OK, measurement=rec.measurement,
            cost=Cost(*rec.cost) if rec.cost else None, metrics=metrics,
        ))
    return tuple(points)


def build_run(session: PerfSession, status: str) -> Run:
    """The perfkit Run of every perfbench call of this session."""
    from perfkit.core.record import Run
    from perfkit.pipeline.sweep import device_properties, new_run_id
    from perfkit.profiler.env import capture_env

    points = session_points(session)
    devices = {str(r.measurement.extra.get("device", "cpu")) for r in session.records}
    device = "cuda" if any(d.startswith("cuda") for d in devices) else "cpu"
    now = dt.datetime.now(dt.timezone.utc)
    spec = {"name": session.name, "description": "perfbench measurements from pytest",
            "device": device, "workloads": sorted({p.workload for p in points})}
    env = replace(capture_env(session.rootdir), device=device_properties(device))
    # torch's count now is the caller's again; the measurements used what perfbench set
    used = {r.measurement.extra.get("threads") for r in session.records}
    env = replace(env, cpu=replace(env.cpu, threads=used.pop() if len(used) == 1 else None))
    return Run(
        run_id=new_run_id(now),
        created=now.isoformat(timespec="seconds"),
        finished=now.isoformat(timespec="seconds"),
        status=status,
        spec=spec,
        spec_hash=hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16],
        spec_path=str(session.rootdir),
        device=device,
        env=env,
        points=points,
    )


def judge(session: PerfSession, run: Run) -> None:
    """The gate's verdict of every checked measurement against the baseline (perfkit.comparison.baseline)."""
    from perfkit.comparison.baseline import baseline_policy, gate_against_baseline
    from perfkit.reports.gate.format import status_text, verdict_line

    checked = {point_key_of(r): r for r in session.records if r.checked}
    base = session.baseline()
    in_base = {p.key for p in base.points if p.measurement is not None}
    for key, rec in checked.items():
        if key not in in_base:
            rec.verdict = f"{key}: not in the baseline; nothing to compare"
    judged = {k: r for k, r in checked.items() if k in in_base}
    if not judged:
        return
    policy = baseline_policy(session.max_slowdown, {k: r.max_slowdown for k, r in judged.items()
                                                    if r.max_slowdown is not None})
    cand = replace(run, points=tuple(p for p in run.points if p.key in judged))
    result = gate_against_baseline(cand, base, policy, str(session.baseline_path))
    for c in result.rows:
        if c.point_key in judged:
            judged[c.point_key].verdict = verdict_line(c)
    session.gate_status = status_text(result)
    session.gate_failed = result.failed


def write_run(session: PerfSession, run: Run) -> Path:
    from perfkit.pipeline.run_files import write_final

    assert session.out_dir is not None
    run_dir = session.out_dir / run.run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    write_final(run_dir, run)
    return run_dir


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    perf = session.config.stash.get(SESSION_KEY, None)
    if perf is None or not perf.records:
        return
    status = "interrupted" if exitstatus == pytest.ExitCode.INTERRUPTED else "complete"
    if perf.out_dir is None and perf.baseline_path is None:
        return
    run = build_run(perf, status)
    if perf.baseline_path is not None:
        judge(perf, run)
        run = replace(run, points=session_points(perf))
        if perf.gate_failed and exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if perf.out_dir is None:
        return
    try:
        perf.written = write_run(perf, run)
    except OSError as exc:
        perf.write_error = f"cannot write the run under {perf.out_dir}: {exc}"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    perf = config.stash.get(SESSION_KEY, None)
    if perf is None or not perf.records:
        return
    from perfkit.core.units import fmt_pct, fmt_time

    tr = terminalreporter
    tr.section("perfkit")
    for rec in perf.records:
        st = rec.measurement.stats
        tr.write_line(f"{rec.nodeid} [{rec.label}]: median {fmt_time(st.median_s)} "
                      f"{fmt_pct(st.rel_ci_halfwidth)} (n={st.n})")
        if rec.verdict:
            tr.write_line(f"    {rec.verdict}")
    if perf.gate_status is not None:
        tr.write_line(f"perfkit gate against {perf.baseline_path}: {perf.gate_status}", red=perf.gate_failed)
    if perf.written is not None:
        tr.write_line(f"perfkit: run written to {perf.written}")
    elif perf.write_error is not None:
        tr.write_line(f"perfkit: error: {perf.write_error}", red=True)
