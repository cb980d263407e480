"""`perfkit serve`: an OpenAI-compatible streaming server with known timings, to load-test against.

- `options.py`    what the command line configures (no torch, no aiohttp)
- `tokenizer.py`  the deterministic tokenizer: token counts and ids of a string prompt
- `protocol.py`   an OpenAI request body -> a typed GenRequest (or a 400 RequestError)
- `chunks.py`     OpenAI response bodies and stream chunks; SSE framing; error bodies
- `metrics.py`    Prometheus counters, gauges and histograms named as vLLM's (`perfkit:` prefix)
- `engine.py`     what the HTTP layer asks of an engine; the token a step produces
- `slot_pool.py`  server-side concurrency slots with a FIFO queue (synthetic mode)
- `spec_decode.py` simulated speculative-decoding acceptance (synthetic mode)
- `synthetic.py`  the synthetic engine: tokens at configured TTFT / ITL on absolute deadlines
- `slots.py`      the slot decoder: one request per KV-cache row, per-row positions (torch)
- `batcher.py`    continuous batching over the slot decoder, in one background thread
- `model_engine.py` the model engine: perfkit's decoder behind the batcher
- `faults.py`     which requests get an injected fault, and the fault names
- `stream.py`     one streamed (SSE) or whole response, with the perfkit time stamps
- `app.py`        the aiohttp application: routes and handlers
- `runner.py`     bind, print the listening line, stop on SIGINT / SIGTERM
"""
