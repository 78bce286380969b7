"""OpenAI adapter: the gain from bounded concurrency against a server with a fixed latency per request.

    .venv/bin/python -m benchmarks.news_openai_concurrency [--latency-ms 100] [--requests 48]

Our chat-completions server answers with the seeded random responder after sleeping `latency` per
request (standing in for a remote model's time per answer); the adapter sends the batch with
concurrency 1, 4 and 16. Prints requests/s and the speed-up over concurrency 1, measured in one run.
"""

from __future__ import annotations

import argparse
import time

from vignette_bench.eval.adapters.base import ChoiceRequest
from vignette_bench.eval.adapters.openai_adapter import OpenAIAdapter
from vignette_bench.eval.adapters.reference import RandomResponder
from vignette_bench.eval.serve.server import ChatServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--requests", type=int, default=48)
    args = parser.parse_args()

    def latency(body: dict) -> None:
        time.sleep(args.latency_ms / 1000)
        return None

    batch = [ChoiceRequest(f"q{i}", None, f"question {i}", ("a", "b", "c", "d")) for i in range(args.requests)]
    rates = {}
    with ChatServer(RandomResponder(seed=0), interceptor=latency) as server:
        for concurrency in (1, 4, 16):
            adapter = OpenAIAdapter("random", base_url=server.base_url, api_key="x", concurrency=concurrency)
            start = time.perf_counter()
            results = adapter.choose(batch)
            elapsed = time.perf_counter() - start
            assert all(r.valid for r in results)
            rates[concurrency] = len(batch) / elapsed
    print(f"latency {args.latency_ms:.0f} ms/request, {args.requests} requests")
    for concurrency, rate in rates.items():
        print(f"concurrency {concurrency:>2}: {rate:7.1f} requests/s  ({rate / rates[1]:.1f}x concurrency 1)")


if __name__ == "__main__":
    main()
