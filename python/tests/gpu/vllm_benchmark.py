"""`vllm bench latency` and `vllm bench throughput` without vLLM's server dependencies (uvicorn,
fastapi): the same benchmark modules, arguments and JSON output, called directly.

    python3 vllm_benchmark.py latency|throughput ARGS...   (ARGS: those of `vllm bench KIND`)
"""
import importlib
import sys

try:
    from vllm.utils.argparse_utils import FlexibleArgumentParser
except ImportError:
    from vllm.utils import FlexibleArgumentParser

if __name__ == "__main__":
    kind = sys.argv[1] if len(sys.argv) > 1 else ""
    if kind not in ("latency", "throughput"):
        sys.exit("usage: vllm_benchmark.py latency|throughput ARGS...")
    bench = importlib.import_module(f"vllm.benchmarks.{kind}")
    parser = FlexibleArgumentParser(description=__doc__)
    bench.add_cli_args(parser)
    bench.main(parser.parse_args(sys.argv[2:]))
