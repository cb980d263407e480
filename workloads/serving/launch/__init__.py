"""Starting a server per configuration of a sweep (docs/serving.md "Sweeps that start the server").

- spec.py      the `server:` block of a serving workload (command, env, readiness, grid, ...)
- grid.py      the block's grid -> configurations; placeholders filled into command and env
- process.py   the server as its own process group: start, stop (SIGTERM, then SIGKILL), log tail
- ready.py     readiness, start-up time, the server's version, the cache reset
"""
