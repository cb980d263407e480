"""Other serving benchmarks' result files read into perfkit's request records.

`read_serving_results(path)` (dispatch.py) reads the result of `vllm bench serve --save-result
[--save-detailed]` (vllm.py), NVIDIA AIPerf's profile_export.jsonl / profile_export_aiperf.json
(aiperf.py) or GuideLLM's benchmarks.json / .yaml (guidellm.py), telling them apart by content,
and returns one `IngestedStage` (stage.py) per load level: the requests rebuilt as `RequestRecord`s (token
times from TTFT and chunk gaps, or evenly spaced where the file keeps none; rebuild.py) and the
tool's own aggregates under perfkit's names. The summary names, common to the three:

| perfkit key                  | meaning (unit)                                                   |
| ---------------------------- | ---------------------------------------------------------------- |
| ttft_STAT_s                  | time to first token (s)                                          |
| tpot_STAT_s                  | (E2E - TTFT) / (output tokens - 1): vLLM's TPOT, AIPerf's and    |
|                              | GuideLLM's "inter_token_latency" (s)                             |
| token_itl_STAT_s             | gaps between consecutive streamed chunks, pooled: vLLM's "itl",  |
|                              | AIPerf's "inter_chunk_latency" (s)                               |
| e2e_STAT_s                   | end-to-end latency, send to last token (s)                       |
| request_per_s, output_tok_per_s, total_tok_per_s, goodput_request_per_s | throughputs   |
| completed, failed, input_tokens, output_tokens, duration_s | counts and the stage's length  |

STAT: mean, std, min, max, p50, pNN (p99.9 -> p99_9). Each source module has its full table;
the definitions that differ from perfkit's travel with each stage (`IngestedStage.definitions`).
A file that cannot be read raises `ServingResultsError` (boundary.py; a bad-input PerfkitError).

`read_serving_run(path)` (to_run.py) makes one perfkit run of a file's stages, a serving point
per stage (points.py: the load as params, metrics by perfkit's definitions or the tool's
aggregates under perfkit's keys), which `perfkit ingest --format vllm|aiperf|guidellm|serving`
stores (docs/serving-ingest.md).
"""
