#include "cli/cli_harness.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace ridgeline::testing {

std::string tmp_path(const std::string& name) { return std::string(RIDGELINE_TMP_DIR) + "/" + name; }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void expect_bad(const std::string& args, const std::string& mentions) {
  RunResult r = run(args);
  EXPECT_EQ(r.status, 2) << "ridgeline " << args << "\n" << r.out << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
  EXPECT_NE(r.err.find(mentions), std::string::npos) << "expected '" << mentions << "' in: " << r.err;
}

RunResult run(const std::string& args) {
  static int counter = 0;
  std::string base = std::string(RIDGELINE_TMP_DIR) + "/run_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  std::string cmd = std::string(RIDGELINE_BIN) + " " + args + " >" + base + ".out 2>" + base + ".err";
  int rc = std::system(cmd.c_str());
  RunResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

nlohmann::json run_json(const std::string& args) {
  RunResult r = run(args + " --json");
  EXPECT_EQ(r.status, 0) << "ridgeline " << args << "\nstderr: " << r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON from `ridgeline " << args << "`: " << e.what() << "\n" << r.out;
    return {};
  }
}

}  // namespace ridgeline::testing
