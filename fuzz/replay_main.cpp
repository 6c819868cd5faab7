// Corpus replay driver: runs LLVMFuzzerTestOneInput over every regular file found
// (recursively) under each argument, so that ctest exercises fuzz targets without libFuzzer.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// Files over this size are skipped: fuzz inputs are small by construction.
constexpr std::uintmax_t kMaxReplayBytes = 16u << 20;

int run_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    const std::filesystem::path root(argv[i]);
    if (std::filesystem::is_regular_file(root, ec)) {
      count += run_file(root);
      continue;
    }
    if (!std::filesystem::is_directory(root, ec)) continue;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root, ec)) {
      if (!entry.is_regular_file() || entry.file_size() > kMaxReplayBytes) continue;
      count += run_file(entry.path());
    }
  }
  LLVMFuzzerTestOneInput(nullptr, 0);  // the empty input is always part of the corpus
  std::printf("replayed %d inputs\n", count + 1);
  return 0;
}
