// df11 command-line tool: CLI11 wiring only; the commands are in cli/src (library df11_cli),
// the work in the libraries below it (pipeline/, model/, ...).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "signals.h"
#include "inspect_command.h"
#include "bench_command.h"

#ifndef DF11_VERSION_STRING
#define DF11_VERSION_STRING "0.0.0"
#endif

namespace app = df11::app;

int main(int argc, char** argv) {
  app::install_signal_handlers();

  CLI::App cli{"df11: lossless DFloat11 compression of BF16 model weights", "df11"};
  cli.set_version_flag("--version", "df11 " DF11_VERSION_STRING);
  cli.require_subcommand(1);

  // Global options: accepted before or after the subcommand.
  int threads = 0;
  bool quiet = false;
  int verbose = 0;
  bool force = false;
  std::string group_by = "block";
  cli.add_option("--threads", threads, "worker threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  cli.add_flag("-q,--quiet", quiet, "no progress bar and no summary; errors and warnings only");
  cli.add_flag("-v,--verbose", verbose, "more detail (per group)");
  cli.add_flag("--force", force,
               "replace an existing output folder (once the new one is complete)");
  cli.add_option("--group-by", group_by,
                 "block: one group per transformer block (default); tensor: one per weight")
      ->check(CLI::IsMember({"block", "tensor"}));

  app::CompressOptions compress;
  std::string compress_in, compress_out;
  CLI::App* compress_cmd =
      cli.add_subcommand("compress", "Hugging Face BF16 checkpoint folder -> DF11 model folder");
  compress_cmd->add_option("MODEL_DIR", compress_in, "checkpoint folder")->required();
  compress_cmd->add_option("-o,--output", compress_out, "output folder (OUT_DIR)")->required();

  std::string decompress_in, decompress_out;
  CLI::App* decompress_cmd = cli.add_subcommand(
      "decompress", "DF11 folder written by df11 -> the original files, byte for byte");
  decompress_cmd->add_option("DF11_DIR", decompress_in, "DF11 model folder")->required();
  decompress_cmd->add_option("-o,--output", decompress_out, "output folder")->required();
  bool decompress_sha256 = false;
  decompress_cmd->add_flag("--sha256", decompress_sha256,
                           "also hash every rebuilt file against its recorded SHA-256");

  std::string verify_in, verify_against, device = "auto";
  CLI::App* verify_cmd = cli.add_subcommand(
      "verify", "decode everything and check every checksum (exit 0 only if all match)");
  verify_cmd->add_option("DF11_DIR", verify_in, "DF11 model folder")->required();
  verify_cmd->add_option("--against", verify_against,
                         "original BF16 folder: compare every tensor bit for bit");
  verify_cmd->add_option("--device", device, "decoder: cpu, cuda or auto (default)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  bool verify_sha256 = false;
  verify_cmd->add_flag("--sha256", verify_sha256,
                       "also hash every rebuilt original file against its recorded SHA-256");

  app::InspectCommandOptions inspect;
  CLI::App* inspect_cmd = cli.add_subcommand(
      "inspect", "describe a model folder or file (BF16 or DF11): groups, sizes, entropy");
  inspect_cmd->add_option("PATH", inspect.path, "folder or .safetensors file")->required();
  inspect_cmd->add_flag("--json", inspect.json, "machine-readable output");
  inspect_cmd->add_option("--baseline", inspect.baselines,
                          "also measure a general-purpose compressor (zstd)");
  CLI::App* bench_cmd = cli.add_subcommand("bench", "benchmarks");
  bench_cmd->require_subcommand(1);
  app::BenchDecodeOptions bench;
  std::string bench_device = "cuda";
  CLI::App* bench_decode_cmd = bench_cmd->add_subcommand(
      "decode", "decode speed of one synthetic Llama-3.1-8B block coded as one group");
  bench_decode_cmd->add_option("--device", bench_device, "cuda (default), cpu or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  bench_decode_cmd->add_option("--runs", bench.runs, "timed runs (median)")
      ->check(CLI::PositiveNumber);
  bench_decode_cmd->add_option("--warmup", bench.warmup, "untimed runs first")
      ->check(CLI::NonNegativeNumber);
  bench_decode_cmd->add_option("--model-blocks", bench.model_blocks,
                               "cuda: blocks decoded in the inference pattern (0 skips it)");
  bench_decode_cmd->add_option("--seed", bench.seed, "weight generator seed");
  bench_decode_cmd->add_option("--hidden", bench.hidden, "hidden size")->check(CLI::PositiveNumber);
  bench_decode_cmd->add_option("--intermediate", bench.intermediate, "MLP size")
      ->check(CLI::PositiveNumber);
  bench_decode_cmd->add_option("--kv-dim", bench.kv_dim, "rows of k_proj and v_proj")
      ->check(CLI::PositiveNumber);
  bench_decode_cmd->fallthrough();

  for (CLI::App* sub : cli.get_subcommands({})) sub->fallthrough();

  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = cli.exit(e);
    return code == 0 ? app::kExitOk : app::kExitUsage;
  }

  app::OutputOptions output;
  output.verbosity = quiet ? 0 : 1 + verbose;
  output.progress = ::isatty(STDERR_FILENO) != 0 && !quiet;

  if (compress_cmd->parsed()) {
    compress.model_dir = compress_in;
    compress.out_dir = compress_out;
    compress.force = force;
    compress.threads = threads;
    compress.group_by = group_by == "tensor" ? app::GroupBy::kTensor : app::GroupBy::kBlock;
    return app::run_compress_command(compress, output, std::cout, std::cerr);
  }
  if (decompress_cmd->parsed()) {
    app::DecompressOptions options;
    options.df11_dir = decompress_in;
    options.out_dir = decompress_out;
    options.force = force;
    options.threads = threads;
    options.file_sha256 = decompress_sha256;
    return app::run_decompress_command(options, output, std::cout, std::cerr);
  }
  if (verify_cmd->parsed()) {
    app::VerifyOptions options;
    options.df11_dir = verify_in;
    if (!verify_against.empty()) options.against = verify_against;
    options.device = device == "cpu"    ? app::DeviceChoice::kCpu
                     : device == "cuda" ? app::DeviceChoice::kCuda
                                        : app::DeviceChoice::kAuto;
    options.threads = threads;
    options.file_sha256 = verify_sha256;
    return app::run_verify_command(options, output, std::cout, std::cerr);
  }
  if (inspect_cmd->parsed()) {
    inspect.threads = threads;
    inspect.verbosity = output.verbosity;
    return app::run_inspect(inspect, std::cout, std::cerr);
  }
  if (bench_decode_cmd->parsed()) {
    bench.threads = threads;
    bench.device = bench_device == "cpu"    ? app::DeviceChoice::kCpu
                   : bench_device == "auto" ? app::DeviceChoice::kAuto
                                            : app::DeviceChoice::kCuda;
    return app::run_bench_decode(bench, std::cout, std::cerr);
  }
  return app::kExitUsage;
}
