// df11 command-line tool: CLI11 wiring only; the commands are in cli/src (library df11_cli),
// the work in the libraries below it (pipeline/, model/, ...).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_command.h"
#include "cli_text.h"
#include "commands.h"
#include "df11/hub/hub.h"
#include "exit_codes.h"
#include "hub_commands.h"
#include "inspect_command.h"
#include "signals.h"
#include "summary_text.h"

#ifndef DF11_VERSION_STRING
#define DF11_VERSION_STRING "0.0.0"
#endif

namespace app = df11::app;

namespace {

// Options that apply to several subcommands. Each is declared on every subcommand it applies
// to (so that `df11 SUB --help` lists it, with its default) and on the top level (so that it
// may come before the subcommand too); both bind the same variable.
struct CommonOptions {
  std::string threads;    // validated after parsing: a positive count
  std::string transfers;  // Hub commands and Hub ids: parallel transfers, validated after parsing
  bool quiet = false;
  int verbose = 0;
  bool json = false;
  bool force = false;
};

void add_output_options(CLI::App* app, CommonOptions& common, bool with_json) {
  app->add_option("--threads", common.threads,
                  "worker threads, at most the number of cores (default: all cores)")
      ->type_name("N");
  app->add_flag("-q,--quiet", common.quiet, "errors and warnings only");
  app->add_flag("-v,--verbose", common.verbose, "more detail (per group, device notes)");
  if (with_json) app->add_flag("--json", common.json, "print the result as one JSON document");
}

// Hub transfers wait on the network, not on a core: their own count, not clamped to the cores
// (huggingface_hub also runs 8 by default).
constexpr int kDefaultTransfers = 8;
constexpr int kMaxTransfers = 64;

void add_transfers_option(CLI::App* app, CommonOptions& common) {
  app->add_option("--transfers", common.transfers,
                  "parallel Hub transfers (default 8; not limited by the core count)")
      ->type_name("N");
}

// With --json anywhere on the command line, a usage error is a JSON document on stdout too
// (the command it names: "compress", "bench decode", ...; "df11" before one is named).
std::optional<std::string> g_json_command;

std::optional<std::string> json_command(int argc, char** argv) {
  bool json = false;
  std::string command = "df11";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg == "--json") json = true;
    for (const char* name :
         {"compress", "decompress", "verify", "inspect", "pull", "push", "publish", "bench"}) {
      if (command == "df11" && arg == name) {
        command = name;
      } else if (command == "bench" && (arg == "decode" || arg == "gemv")) {
        command += " " + arg;
      }
    }
  }
  if (!json) return std::nullopt;
  return command;
}

int usage_error(const std::string& message, const std::string& hint) {
  if (g_json_command) {
    std::cout << app::error_json(*g_json_command,
                                 df11::Status(df11::ErrorCode::kInvalidArgument, message))
                     .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
              << "\n";
  }
  std::cerr << "error: " << message << " [invalid_argument]\n";
  if (!hint.empty()) std::cerr << hint << "\n";
  return app::kExitUsage;
}

// The names an app accepts, "--long" and "-s".
std::vector<std::string> option_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app->get_options()) {
    for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : opt->get_snames()) names.push_back("-" + n);
  }
  return names;
}

const CLI::Option* find_option(const CLI::App* app, const std::string& name) {
  for (const CLI::Option* opt : app->get_options()) {
    if (opt->check_name(name)) return opt;
  }
  return nullptr;
}

// Names an unknown subcommand or option before CLI11 does ("A subcommand is required", "The
// following arguments were not expected"), with the closest known name. Returns the exit code
// of the error, or -1 when the command line names only known things.
int check_names(CLI::App& cli, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const CLI::App* sub : cli.get_subcommands([](const CLI::App*) { return true; })) {
    commands.push_back(sub->get_name());
  }
  CLI::App* scope = &cli;  // the subcommand whose options apply, once it is named
  std::string scope_name = "df11";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() > 1 && arg[0] == '-' && !(arg.size() > 1 && std::isdigit(arg[1]))) {
      std::string name = arg.substr(0, arg.find('='));
      if (name == "-h" || name == "--help" || name == "--version") continue;
      // Short flags may be bundled (-qv): check each letter.
      std::vector<std::string> names;
      if (name.size() > 2 && name[1] != '-') {
        for (size_t k = 1; k < name.size(); ++k) names.push_back(std::string("-") + name[k]);
      } else {
        names.push_back(name);
      }
      for (const std::string& n : names) {
        const CLI::Option* opt = find_option(scope, n);
        if (opt == nullptr && scope != &cli) opt = find_option(&cli, n);
        if (opt == nullptr) {
          const std::string near = app::closest_match(n, option_names(scope));
          return usage_error("unknown option '" + n + "' for " + scope_name +
                                 (near.empty() ? "" : " (did you mean '" + near + "'?)"),
                             "run '" + scope_name + " --help' for its options");
        }
        // An option with a value consumes the next argument (which may start with '-').
        if (opt->get_expected_max() > 0 && arg.find('=') == std::string::npos &&
            names.size() == 1) {
          ++i;
        }
      }
      continue;
    }
    if (scope == &cli) {
      CLI::App* sub = nullptr;
      for (CLI::App* s : cli.get_subcommands([](CLI::App*) { return true; })) {
        if (s->get_name() == arg) sub = s;
      }
      if (sub == nullptr) {
        const std::string near = app::closest_match(arg, commands);
        return usage_error("unknown command '" + arg + "'" +
                               (near.empty() ? "" : " (did you mean '" + near + "'?)"),
                           "commands: compress, verify, decompress, inspect, pull, push, publish, "
                           "bench; run "
                           "'df11 --help' for more");
      }
      scope = sub;
      scope_name = "df11 " + arg;
    } else if (!scope->get_subcommands([](CLI::App*) { return true; }).empty()) {
      // A subcommand with subcommands of its own (bench decode).
      for (CLI::App* s : scope->get_subcommands([](CLI::App*) { return true; })) {
        if (s->get_name() == arg) {
          scope = s;
          scope_name += " " + arg;
          break;
        }
      }
    }
  }
  return -1;
}

// --threads: a positive count; more than the cores here is clamped with a note (oversubscribed
// TBB arenas made a 0.26 s run take 210 s). Returns 0 for "all cores", -1 after an error.
// A whole positive number, or -1 (std::stol accepts a prefix and throws: neither is wanted).
long parse_count(const std::string& text) {
  long value = 0;
  size_t used = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  return used == text.size() && value >= 1 ? value : -1;
}

int resolve_threads(const std::string& text, bool quiet) {
  if (text.empty()) return 0;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const long value = parse_count(text);
  if (value < 1) {
    usage_error("--threads " + text + ": must be a whole number of threads, at least 1",
                "leave it out to use all " + app::count_of(cores, "core") + " of this machine");
    return -1;
  }
  if (static_cast<unsigned long>(value) > cores) {
    if (!quiet) {
      std::cerr << "note: --threads " << value << " is more than the "
                << app::count_of(cores, "core") << " of this machine: using " << cores << "\n";
    }
    return static_cast<int>(cores);
  }
  return static_cast<int>(value);
}

// --transfers: 1 .. kMaxTransfers; kDefaultTransfers when absent. -1 after an error.
int resolve_transfers(const std::string& text) {
  if (text.empty()) return kDefaultTransfers;
  const long value = parse_count(text);
  if (value < 1 || value > kMaxTransfers) {
    usage_error("--transfers " + text + ": must be a whole number from 1 to " +
                    std::to_string(kMaxTransfers),
                "leave it out for " + std::to_string(kDefaultTransfers) + " parallel transfers");
    return -1;
  }
  return static_cast<int>(value);
}

}  // namespace

int main(int argc, char** argv) {
  app::install_signal_handlers();
  g_json_command = json_command(argc, argv);

  CLI::App cli{"df11: lossless DFloat11 compression of BF16 model weights", "df11"};
  cli.set_version_flag("--version", "df11 " DF11_VERSION_STRING);
  cli.require_subcommand(1);
  cli.option_defaults()->always_capture_default();
  cli.footer("Run 'df11 COMMAND --help' for the options of a command.");

  CommonOptions common;
  add_output_options(&cli, common, /*with_json=*/true);
  add_transfers_option(&cli, common);
  cli.add_flag("--force", common.force,
               "compress, decompress: replace an existing output (once the new one is complete)");
  std::string group_by = "block";

  app::CompressOptions compress;
  std::string compress_in, compress_out;
  CLI::App* compress_cmd =
      cli.add_subcommand("compress", "Hugging Face BF16 checkpoint folder -> DF11 model folder");
  compress_cmd->add_option("MODEL_DIR", compress_in, "checkpoint folder")->required();
  compress_cmd->add_option("-o,--output", compress_out, "output folder (OUT_DIR)")->required();
  compress_cmd
      ->add_option("--group-by", group_by,
                   "block: one group per transformer block; tensor: one per weight")
      ->check(CLI::IsMember({"block", "tensor"}));
  compress_cmd->add_flag("--force", common.force,
                         "replace an existing OUT_DIR (once the new one is complete)");
  // The originals' SHA-256 is opt-in (spec 5.3, 1.2): restoring is checked without it (spec
  // 7.6), and it costs ~0.5 CPU-s per GB and, on many cores, the largest file's hash time.
  // --no-source-sha256, the default since, stays accepted for existing scripts.
  bool source_sha256 = false;
  bool no_source_sha256 = false;
  CLI::Option* source_sha256_flag = compress_cmd->add_flag(
      "--source-sha256", source_sha256,
      "also record each original file's SHA-256 (provenance, e.g. the Hub's LFS object id; "
      "restoring is checked without it; costs ~0.5 CPU-s per GB)");
  compress_cmd
      ->add_flag("--no-source-sha256", no_source_sha256,
                 "record no SHA-256 of the originals (the default; accepted for scripts)")
      ->excludes(source_sha256_flag);
  add_output_options(compress_cmd, common, true);
  add_transfers_option(compress_cmd, common);
  cli.add_option("--group-by", group_by, "compress: block (default) or tensor")
      ->check(CLI::IsMember({"block", "tensor"}));

  std::string decompress_in, decompress_out;
  bool decompress_sha256 = false;
  CLI::App* decompress_cmd = cli.add_subcommand(
      "decompress",
      "DF11 folder -> the original files, byte for byte (written by df11) or a BF16 "
      "checkpoint with the same tensors (published by the dfloat11 tools)");
  decompress_cmd->add_option("DF11_DIR", decompress_in, "DF11 model folder")->required();
  decompress_cmd->add_option("-o,--output", decompress_out, "output folder")->required();
  decompress_cmd->add_flag("--sha256", decompress_sha256,
                           "also hash every rebuilt file against its recorded SHA-256");
  decompress_cmd->add_flag("--force", common.force,
                           "replace an existing output (once the new one is complete)");
  add_output_options(decompress_cmd, common, true);
  add_transfers_option(decompress_cmd, common);
  size_t decompress_files = 0;
  decompress_cmd
      ->add_option("--parallel-files", decompress_files,
                   "original files restored side by side (default: one per 4 threads, at most "
                   "4); each holds two decoded pieces")
      ->check(CLI::Range(1, 64));
  std::string decompress_like;
  decompress_cmd->add_option("--like", decompress_like,
                             "folder of .safetensors with the same tensor names (e.g. the "
                             "original model): shapes for a DF11 folder published by the "
                             "dfloat11 tools, where config.json does not give them");

  std::string verify_in, verify_against, device = "auto";
  bool verify_sha256 = false;
  CLI::App* verify_cmd = cli.add_subcommand(
      "verify", "decode everything and check every checksum (exit 0 only if all match)");
  verify_cmd->add_option("DF11_DIR", verify_in, "DF11 model folder")->required();
  verify_cmd->add_option("--against", verify_against,
                         "original BF16 folder: compare every tensor bit for bit");
  verify_cmd->add_option("--device", device, "decoder: cpu, cuda or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  verify_cmd->add_flag("--sha256", verify_sha256,
                       "also hash every rebuilt original file against its recorded SHA-256");
  add_output_options(verify_cmd, common, true);
  add_transfers_option(verify_cmd, common);

  app::InspectCommandOptions inspect;
  CLI::App* inspect_cmd = cli.add_subcommand(
      "inspect", "describe a model folder or file (BF16 or DF11): groups, sizes, entropy");
  inspect_cmd->add_option("PATH", inspect.path, "folder or .safetensors file")->required();
  inspect_cmd->add_option("--baseline", inspect.baselines,
                          "also measure a general-purpose compressor (zstd)");
  add_output_options(inspect_cmd, common, true);
  add_transfers_option(inspect_cmd, common);

  // Hub commands (pipeline/hub_pipeline.h over hub/). Endpoint, token and cache come from
  // HF_ENDPOINT, HF_TOKEN / HF_HOME/token, HF_HUB_CACHE / HF_HOME: never from the command line,
  // so the token stays out of shell history and process listings.
  app::PullModelOptions pull;
  std::string pull_local_dir;
  CLI::App* pull_cmd = cli.add_subcommand(
      "pull", "download a Hub repo into the Hugging Face cache; prints the snapshot folder");
  pull_cmd->add_option("REPO", pull.repo, "org/name[@revision]")->required();
  pull_cmd->add_option("--local-dir", pull_local_dir, "plain files in this folder instead");
  pull_cmd->add_option("--include", pull.include, "only repo paths matching these globs");
  add_output_options(pull_cmd, common, true);
  add_transfers_option(pull_cmd, common);

  app::PushModelOptions push;
  std::string push_base;
  CLI::App* push_cmd = cli.add_subcommand(
      "push", "verify a DF11 folder, write its model card if missing, upload it to the Hub");
  push_cmd->add_option("DF11_DIR", push.folder, "DF11 model folder")->required();
  push_cmd->add_option("REPO", push.repo, "org/name")->required();
  push_cmd->add_option("--revision", push.revision, "branch to commit to");
  push_cmd->add_flag("--private", push.private_repo, "create the repo private");
  push_cmd->add_flag("--create-pr", push.create_pr, "open a pull request instead of committing");
  push_cmd->add_option("--base-model", push_base, "source repo id for the model card");
  push_cmd->add_option("-m,--message", push.message, "commit message");
  add_output_options(push_cmd, common, true);
  add_transfers_option(push_cmd, common);

  app::PublishOptions publish;
  CLI::App* publish_cmd = cli.add_subcommand(
      "publish", "pull a BF16 repo, compress, verify and push it as a DF11 repo (resumable)");
  publish_cmd->add_option("SOURCE", publish.source, "BF16 repo org/name[@revision]")->required();
  publish_cmd->add_option("TARGET", publish.target, "DF11 repo org/name")->required();
  publish_cmd->add_option("-o,--output", publish.work_dir,
                          "DF11 folder (default: the target's name, reused when present)");
  publish_cmd->add_flag("--private", publish.private_repo, "create the repo private");
  publish_cmd->add_flag("--create-pr", publish.create_pr, "open a pull request");
  CLI::Option* publish_sha256_flag =
      publish_cmd->add_flag("--source-sha256", source_sha256, "as compress");
  publish_cmd->add_flag("--no-source-sha256", no_source_sha256, "as compress (the default)")
      ->excludes(publish_sha256_flag);
  publish_cmd->add_option("--group-by", group_by, "block or tensor (as compress)")
      ->check(CLI::IsMember({"block", "tensor"}));
  add_output_options(publish_cmd, common, true);
  add_transfers_option(publish_cmd, common);

  CLI::App* bench_cmd = cli.add_subcommand("bench", "benchmarks");
  bench_cmd->require_subcommand(1);
  app::BenchDecodeOptions bench;
  std::string bench_device = "auto";
  CLI::App* bench_decode_cmd = bench_cmd->add_subcommand(
      "decode", "decode speed of one synthetic Llama-3.1-8B block coded as one group");
  bench_decode_cmd
      ->add_option("--device", bench_device,
                   "auto (CUDA when a GPU is usable, else the CPU), cuda or cpu")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  bench_decode_cmd->add_option("--runs", bench.runs, "timed runs (median)")
      ->check(CLI::Range(1, 1000000));
  bench_decode_cmd->add_option("--warmup", bench.warmup, "untimed runs first")
      ->check(CLI::Range(0, 1000000));
  bench_decode_cmd->add_option("--model-blocks", bench.model_blocks,
                               "cuda: blocks decoded in the inference pattern (0 skips it)");
  bench_decode_cmd->add_option("--seed", bench.seed, "weight generator seed");
  bench_decode_cmd->add_option("--hidden", bench.hidden, "hidden size")
      ->check(CLI::Range(1u, 1u << 20));
  bench_decode_cmd->add_option("--intermediate", bench.intermediate, "MLP size")
      ->check(CLI::Range(1u, 1u << 22));
  bench_decode_cmd->add_option("--kv-dim", bench.kv_dim, "rows of k_proj and v_proj")
      ->check(CLI::Range(1u, 1u << 20));
  add_output_options(bench_decode_cmd, common, true);
  app::BenchGemvOptions gemv;
  std::string gemv_batches = "1,2,4,8,16";
  CLI::App* bench_gemv_cmd = bench_cmd->add_subcommand(
      "gemv",
      "GPU y = W x on the same block: cuBLAS, decode + cuBLAS, fused decode+GEMV, and the "
      "12-bit execution layout's fused GEMM");
  bench_gemv_cmd->add_option("--batch", gemv_batches, "batch sizes (columns of x), each 1..16");
  bench_gemv_cmd->add_option("--runs", gemv.block.runs, "timed runs (median)")
      ->check(CLI::Range(1, 1000000));
  bench_gemv_cmd->add_option("--warmup", gemv.block.warmup, "untimed runs first")
      ->check(CLI::Range(0, 1000000));
  bench_gemv_cmd->add_option("--model-blocks", gemv.block.model_blocks,
                             "blocks of the model line at batch 1 (0 skips it)");
  bench_gemv_cmd->add_option("--seed", gemv.block.seed, "weight generator seed");
  bench_gemv_cmd->add_option("--hidden", gemv.block.hidden, "hidden size")
      ->check(CLI::Range(1u, 1u << 20));
  bench_gemv_cmd->add_option("--intermediate", gemv.block.intermediate, "MLP size")
      ->check(CLI::Range(1u, 1u << 22));
  bench_gemv_cmd->add_option("--kv-dim", gemv.block.kv_dim, "rows of k_proj and v_proj")
      ->check(CLI::Range(1u, 1u << 20));
  add_output_options(bench_gemv_cmd, common, true);

  for (CLI::App* sub : cli.get_subcommands([](CLI::App*) { return true; })) sub->footer("");
  if (const int code = check_names(cli, argc, argv); code >= 0) return code;
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return cli.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return cli.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string where = "df11";
    for (CLI::App* sub : cli.get_subcommands()) {
      where += " " + sub->get_name();
      for (CLI::App* s2 : sub->get_subcommands()) where += " " + s2->get_name();
    }
    return usage_error(e.what(), "run '" + where + " --help' for the options");
  }

  if (common.quiet && common.verbose > 0) {
    return usage_error(
        "-q and -v cannot be used together (-q: errors and warnings only; -v: "
        "more detail)",
        "");
  }
  const int threads = resolve_threads(common.threads, common.quiet);
  if (threads < 0) return app::kExitUsage;
  const int transfers = resolve_transfers(common.transfers);
  if (transfers < 0) return app::kExitUsage;
  app::OutputOptions output;
  output.verbosity = common.quiet ? 0 : 1 + common.verbose;
  output.progress = ::isatty(STDERR_FILENO) != 0 && !common.quiet;
  output.json = common.json;

  // A Hub id where a folder is expected is pulled first (pipeline/hub_pipeline.h).
  auto resolve = [&](std::string& argument) -> int {
    if (argument.empty()) return app::kExitOk;
    app::Console console(std::cout, std::cerr, output.json ? 0 : output.verbosity,
                         output.progress && !output.json);
    auto path = app::resolve_model_argument(argument, transfers, console, app::interrupt_token());
    if (!path) {
      if (g_json_command) {
        std::cout << app::error_json(*g_json_command, path.status())
                         .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                  << "\n";
      }
      return app::report_failure(path.status(), console);
    }
    argument = *path;
    return app::kExitOk;
  };
  if (pull_cmd->parsed()) {
    if (!pull_local_dir.empty()) pull.local_dir = pull_local_dir;
    pull.transfers = transfers;
    return app::run_pull_command(pull, output.json, output, std::cout, std::cerr);
  }
  if (push_cmd->parsed()) {
    if (!push_base.empty()) push.base_model = push_base;
    push.threads = threads;
    push.transfers = transfers;
    return app::run_push_command(push, output.json, output, std::cout, std::cerr);
  }
  if (publish_cmd->parsed()) {
    publish.threads = threads;
    publish.transfers = transfers;
    publish.group_by = group_by == "tensor" ? app::GroupBy::kTensor : app::GroupBy::kBlock;
    publish.source_sha256 = source_sha256;
    return app::run_publish_command(publish, output.json, output, std::cout, std::cerr);
  }
  if (compress_cmd->parsed()) {
    if (int rc = resolve(compress_in); rc != 0) return rc;
    compress.model_dir = compress_in;
    compress.out_dir = compress_out;
    compress.force = common.force;
    compress.threads = threads;
    compress.group_by = group_by == "tensor" ? app::GroupBy::kTensor : app::GroupBy::kBlock;
    compress.source_sha256 = source_sha256;
    return app::run_compress_command(compress, output, std::cout, std::cerr);
  }
  if (decompress_cmd->parsed()) {
    if (int rc = resolve(decompress_in); rc != 0) return rc;
    app::DecompressOptions options;
    options.df11_dir = decompress_in;
    options.out_dir = decompress_out;
    options.force = common.force;
    options.threads = threads;
    options.file_sha256 = decompress_sha256;
    options.parallel_files = decompress_files;
    if (!decompress_like.empty()) options.like = decompress_like;
    return app::run_decompress_command(options, output, std::cout, std::cerr);
  }
  if (verify_cmd->parsed()) {
    if (int rc = resolve(verify_in); rc != 0) return rc;
    if (int rc = resolve(verify_against); rc != 0) return rc;
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
    // A Hub id is read remotely (headers and a sample, pipeline/inspect_remote.h); only the
    // zstd baseline, which compresses every weight, pulls the repo first.
    // Offline (HF_HUB_OFFLINE), a Hub id is resolved from the cache and read there.
    std::error_code ec;
    const auto hub_config = df11::hub::config_from_environment();
    const bool offline = hub_config.is_ok() && hub_config->offline;
    inspect.remote = inspect.baselines.empty() && !offline &&
                     !std::filesystem::exists(inspect.path, ec) &&
                     df11::hub::looks_like_repo_ref(inspect.path);
    inspect.transfers = transfers;
    if (!inspect.remote) {
      if (int rc = resolve(inspect.path); rc != 0) return rc;
    }
    inspect.threads = threads;
    inspect.verbosity = output.verbosity;
    inspect.json = common.json;
    return app::run_inspect(inspect, std::cout, std::cerr);
  }
  if (bench_decode_cmd->parsed()) {
    bench.threads = threads;
    bench.device = bench_device == "cpu"    ? app::DeviceChoice::kCpu
                   : bench_device == "cuda" ? app::DeviceChoice::kCuda
                                            : app::DeviceChoice::kAuto;
    bench.json = common.json;
    return app::run_bench_decode(bench, std::cout, std::cerr);
  }
  if (bench_gemv_cmd->parsed()) {
    auto batches = app::parse_batch_list(gemv_batches);
    if (!batches) return usage_error(batches.status().message(), "run 'df11 bench gemv --help'");
    gemv.batches = *batches;
    gemv.block.threads = threads;
    gemv.json = common.json;
    return app::run_bench_gemv(gemv, std::cout, std::cerr);
  }
  return app::kExitUsage;
}
