"""The comparison layer: what a comparison or a history needs, built from typed records of run
directories and the store. Run selection (run directory, BRANCH@GPU, run id -> RunSide:
selectors, sides), the gate's history lookup (gate_history), metric series over commits
(series; history_frame: the dashboard's fast path). Statistics come from perfkit.regression,
table queries from perfkit.store."""
