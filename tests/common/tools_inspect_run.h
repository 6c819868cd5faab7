// Runs `df11 inspect` in-process for tests: exit code, stdout, stderr, parsed JSON.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "inspect_command.h"

namespace df11::test {

struct InspectRun {
  int code = -1;
  std::string out;
  std::string err;
};

inline InspectRun run_inspect_cmd(const std::string& path, bool json,
                                  std::vector<std::string> baselines = {}, int verbosity = 1,
                                  int threads = 0) {
  app::InspectCommandOptions o;
  o.path = path;
  o.json = json;
  o.baselines = std::move(baselines);
  o.verbosity = verbosity;
  o.threads = threads;
  std::ostringstream out, err;
  InspectRun r;
  r.code = app::run_inspect(o, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// Inspects `path` with --json; fails the test unless it exits 0 with valid JSON.
inline nlohmann::json inspect_json(const std::string& path, std::vector<std::string> baselines = {},
                                   int threads = 0) {
  const InspectRun r = run_inspect_cmd(path, true, std::move(baselines), 1, threads);
  EXPECT_EQ(r.code, 0) << r.err;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(r.out);
  } catch (const nlohmann::json::exception& e) {
    ADD_FAILURE() << "inspect --json output is not JSON: " << e.what() << "\n" << r.out;
  }
  return j;
}

// The element of a JSON array whose "name" is `name` (fails the test when absent).
inline const nlohmann::json& by_name(const nlohmann::json& array, const std::string& name) {
  for (const auto& x : array) {
    if (x.contains("name") && x["name"] == name) return x;
  }
  ADD_FAILURE() << "no entry named '" << name << "'";
  static const nlohmann::json kNull;
  return kNull;
}

}  // namespace df11::test
