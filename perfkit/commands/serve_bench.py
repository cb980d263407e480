"""`perfkit serve-bench URL`: load-test an OpenAI-compatible server; the options are declared on
the fields of `kind: serving` in model.yaml (docs/serving.md) and derived from them. Each load level is a point of a run, stored and
gated like any other: TTFT / TPOT / ITL / E2E, goodput under the SLOs, and cost per million
tokens, with the client-bound check and the server's /metrics differences.

`perfkit serve-bench attach RUN_DIR TRACE... [--stage POINT]` adds server traces handed over
after the run (a remote server's profiler files) to a stage of RUN_DIR.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfkit.commands._run_labels import add_labels, add_recording, labels
from perfkit.commands._types import positive_int, seed
from perfkit.commands.spec_options import add_options_on_first_parse, option_at, spec_dict
from perfkit.core.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_POINTS_FAILED

if TYPE_CHECKING:
    from perfkit.workloads.serving.spec import ServingSpec


def _serving_spec() -> type[ServingSpec]:
    from perfkit.workloads.serving.spec import ServingSpec

    return ServingSpec


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "serve-bench", help="load-test an OpenAI-compatible server (latency, goodput, cost) and record a run",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--name", default="serve-bench", help="the run's and workload's name (default: serve-bench)")
    add_options_on_first_parse(p, _serving_spec, after=_attach_arguments)  # `kind: serving`'s options, from its fields
    p.add_argument("--stage", default=None, metavar="POINT",
                   help="attach: the stage (point key) the traces belong to (default: the only one)")
    p.add_argument("--profile", metavar="STEPS|Ns", default=None,
                   help="a window of the server's profiler inside each stage: N engine steps (16) or "
                        "S seconds (2s); its traces are copied into the run")
    p.add_argument("--profile-server", choices=("auto", "perfkit", "vllm", "sglang"), default=None,
                   help="whose /start_profile to call (default auto: asks the server)")
    p.add_argument("--find-capacity", nargs="?", const="concurrency", choices=("concurrency", "rate"), default=None,
                   help="search the load (concurrency, or rate) for the highest one whose --slo holds, proven "
                        "with a binomial bound (docs/serving.md 'Capacity at an SLO')")
    p.add_argument("--max-stages", type=positive_int, default=None,
                   help="stages the capacity search may run (default 8)")
    p.add_argument("--server-trace-dir", metavar="PATH", default=None,
                   help="where the server's traces appear here (a remote server: a shared mount; "
                        "default: perfkit serve's own directory when it runs on this host)")
    p.add_argument("--seed", type=seed, default=0, help="seed of arrivals and prompts (default 0)")
    p.add_argument("--out", type=Path, default=Path("runs"), help="parent directory of the run (default: runs/)")
    add_recording(p)
    p.add_argument("--format", choices=("text", "json"), default="text", help="json: the stages on stdout")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--wide", action="store_true", help="print every column of the stage table")
    add_labels(p, "the GPU behind the server")
    return p


def _attach_arguments(p: argparse.ArgumentParser) -> None:
    """After the URL positional (derived from the spec): `attach`'s run directory and traces."""
    p.add_argument("attach_args", nargs="*", metavar="RUN_DIR TRACE",
                   help="attach: the run directory, then the trace files to add to one of its stages")


def _window(text: str) -> dict[str, Any]:
    """`--profile 16` (engine steps) or `--profile 2s` (seconds)."""
    from perfkit.core.errors import SpecError

    try:
        if text.endswith("s"):
            return {"seconds": float(text[:-1])}
        return {"steps": int(text)}
    except ValueError:
        raise SpecError(f"--profile {text[:40]!r}: give engine steps (16) or seconds (2s)") from None


def workload(args: argparse.Namespace) -> dict[str, Any]:
    """The `kind: serving` workload the options describe."""
    w: dict[str, Any] = {"kind": "serving", "name": args.name, **spec_dict(args, _serving_spec())}
    if args.profile is not None:
        trace: dict[str, Any] = _window(args.profile)
        if args.profile_server:
            trace["server"] = args.profile_server
        if args.server_trace_dir:
            trace["trace_dir"] = args.server_trace_dir
        w["profile"] = {"server_trace": trace}
    elif args.profile_server or args.server_trace_dir:
        from perfkit.core.errors import SpecError

        raise SpecError("--profile-server / --server-trace-dir go with --profile STEPS|Ns; add --profile")
    if args.find_capacity:
        if "slo" not in w:
            from perfkit.core.errors import SpecError

            raise SpecError("--find-capacity searches for the load an SLO holds at: give --slo, e.g. "
                            "--slo ttft_p99=2,tpot_p99=0.05")
        load = w.get("load") or {}
        start = min(load.get("concurrency") or load.get("rate") or [1])
        w["capacity"] = {"over": args.find_capacity, "start": start} | (
            {"max_stages": args.max_stages} if args.max_stages is not None else {})
    return w


def build_spec(args: argparse.Namespace) -> Any:
    from pydantic import ValidationError

    from perfkit.core.errors import SpecError
    from perfkit.pipeline.spec import RunSpec

    raw = {"name": args.name, "device": "cpu", "seed": args.seed,
           "profile": {"torch_profiler": False, "nvtx": False, "analyze": False}, "workloads": [workload(args)]}
    try:
        spec = RunSpec.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err["loc"] if not str(p).isdigit() and p != "workloads"]
        where = option_at(loc, _serving_spec(), {"name": "--name", "profile": "--profile",
                                                 "profile.server_trace": "--profile",
                                                 "profile.server_trace.server": "--profile-server",
                                                 "profile.server_trace.trace_dir": "--server-trace-dir",
                                                 "capacity": "--find-capacity", "capacity.max_stages": "--max-stages",
                                                 "capacity.start": "--concurrency / --rate"})
        message = str(err["msg"]).removeprefix("Value error, ")
        if message.startswith(("URL ", "the URL ")):
            where = "URL"
        elif message.startswith("plan: "):
            where, message = "plan", message.removeprefix("plan: ")
        raise SpecError(f"serve-bench {where}: {message[:300]}") from None
    return spec  # the files it names are read by the profile pipeline's preflight


DEFAULT_MODEL = "default"


def model_of_server(url: str, api_key_env: str | None = None) -> str:
    """The one model the server's /v1/models lists; DEFAULT_MODEL when it cannot be asked; an
    error naming them when it serves several."""
    import os

    from perfkit.core.errors import SpecError
    from perfkit.core.terminal import terminal_safe
    from perfkit.workloads.serving.client.models import served_models

    token = os.environ.get(api_key_env) if api_key_env else None
    models = served_models(url, {"Authorization": f"Bearer {token}"} if token else None)
    if not models:
        return DEFAULT_MODEL
    if len(models) > 1:
        shown = ", ".join(terminal_safe(m[:80]) for m in models[:10])
        raise SpecError(f"--model: the server serves {len(models)} models ({shown}); name one with --model")
    return models[0]


def run_attach(args: argparse.Namespace) -> int:
    from perfkit.core.errors import SpecError
    from perfkit.pipeline.attach_traces import attach

    if len(args.attach_args) < 2:
        raise SpecError("serve-bench attach: give RUN_DIR and at least one TRACE file")
    run_dir, *traces = (Path(a) for a in args.attach_args)
    key, added = attach(run_dir, traces, args.stage)
    if not args.quiet:
        for rel in added:
            print(f"perfkit: {key}: attached {rel}")
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    from perfkit.core.errors import SpecError
    from perfkit.core.terminal import terminal_safe
    from perfkit.pipeline.post_run import PostRunOptions
    from perfkit.pipeline.profile import ProfileHooks, profile
    from perfkit.pipeline.sweep import ProfileOptions
    from perfkit.workloads.serving.client.url import redact_urls

    if args.url == "attach":
        return run_attach(args)
    if args.attach_args:
        raise SpecError(f"serve-bench: unexpected {args.attach_args[0][:80]!r} after the URL; "
                        "to add traces to a run: perfkit serve-bench attach RUN_DIR TRACE...")
    if not args.no_store:  # a store that would lose the run is refused before anything else
        from perfkit.store.url import check_persistent

        check_persistent(args.db)
    if args.model is None:
        args.model = model_of_server(args.url, getattr(args, "api_key_env", None))
    spec = build_spec(args)
    from perfkit.workloads.serving.client.plan_check import processes_warning, window_shortfalls

    shortfalls = window_shortfalls(spec.workloads[0])
    crowded = processes_warning(spec.workloads[0])
    show = not args.quiet and args.format == "text"
    options = ProfileOptions(out_dir=args.out, device="cpu", quick=False, repo=args.repo, labels=labels(args))
    post = PostRunOptions(analyze=False, store=not args.no_store, db_url=args.db)
    def started(run: Any, run_dir: Path, n_points: int) -> None:
        """Once the inputs were checked (bad input stays one line), before anything is sent."""
        for line in [*shortfalls, *crowded]:
            print(f"perfkit: warning: {line}", file=sys.stderr)
        if show:
            _started(run, run_dir, n_points)

    hooks = ProfileHooks(started=started)
    outcome = profile(spec, Path(f"serve-bench {redact_urls(args.url)}"), options, post, hooks)
    final = outcome.run
    if args.format == "json":
        from perfkit.reports.serving.as_json import stages_json

        print(stages_json(final, outcome.run_dir))
    elif not args.quiet:
        from perfkit.core.terminal import terminal_width
        from perfkit.reports.serving.adapter_text import adapter_lines
        from perfkit.reports.serving.capacity_text import capacity_lines
        from perfkit.reports.serving.session_text import session_lines
        from perfkit.reports.serving.text import serving_table
        from perfkit.reports.serving.window_text import window_lines

        found = capacity_lines(final)
        print("\n".join(found) if found else serving_table(final, None if args.wide else terminal_width()))
        for line in [*window_lines(final), *session_lines(final)]:
            print(line)
        for line in adapter_lines(final):
            print(line)
        for message in outcome.messages:
            print(f"perfkit: {terminal_safe(message)}")
        print(outcome.run_dir)
    if outcome.stored is False:
        print(f"perfkit: {terminal_safe(outcome.messages[-1])}", file=sys.stderr)
    if final.status == "interrupted":
        print(f"perfkit: interrupted; {len(final.points)} of {outcome.n_points} stages recorded", file=sys.stderr)
        return outcome.signal_exit_code or EXIT_INTERRUPTED
    failed = final.counts.get("failed")
    if failed:
        first = next((p for p in final.points if p.status == "failed"), None)
        why = f": {first.error}" if first is not None and first.error else ""
        print(f"perfkit: {failed} of {outcome.n_points} stages failed{terminal_safe(why)}", file=sys.stderr)
        return EXIT_POINTS_FAILED
    if outcome.stored is False:
        return EXIT_BAD_INPUT
    return EXIT_OK


def _started(run: Any, run_dir: Path, n_points: int) -> None:
    print(f"perfkit: run {run.run_id}: {n_points} stage{'' if n_points == 1 else 's'} -> {run_dir}", file=sys.stderr)
