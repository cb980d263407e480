"""`perfkit serve-sweep SPEC`: the server of a serving workload started per configuration of its
`server:` block, the workload run against it (a run per repeat, stored like serve-bench's), the
server stopped; the sweep's state in SWEEP_DIR/sweep.json (rewritten atomically per
configuration: `--resume` runs the configurations not finished), its front at the end.

- state.py    sweep.json: the configurations, their status, start-up, version, command, runs, stages
- one.py      one configuration: start, ready, version, cache reset, the runs, stop
- sweep.py    all of them, resume, the front
"""
