"""`vllm bench latency` without vLLM's server dependencies (uvicorn, fastapi): the same
benchmark module, arguments and JSON output, called directly."""
try:
    from vllm.utils.argparse_utils import FlexibleArgumentParser
except ImportError:
    from vllm.utils import FlexibleArgumentParser
from vllm.benchmarks.latency import add_cli_args, main

if __name__ == "__main__":
    parser = FlexibleArgumentParser(description=__doc__)
    add_cli_args(parser)
    main(parser.parse_args())
