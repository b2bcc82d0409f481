// The ERT roofline.json importer: a file written from ERT's format by hand, and bad input.
#include <gtest/gtest.h>

#include "ridgeline/core/error.hpp"
#include "ridgeline/io/embedded.hpp"
#include "ridgeline/io/ert_file.hpp"
#include "ridgeline/io/hardware_file.hpp"

namespace ridgeline {
namespace {

const std::string kFile = std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/ert/roofline.json";

io::ErtImportOptions all_levels() {
  io::ErtImportOptions o;
  o.capacities = {{"DRAM", 256e9}, {"l3", 64.0 * 1024 * 1024}, {"L2", 48.0 * 1024 * 1024}, {"L1", 1.5 * 1024 * 1024}};
  return o;
}

std::string ert(const std::string& gflops, const std::string& gbytes, const std::string& gpu = "false") {
  return R"({"empirical": {"gflops": {"data": )" + gflops + R"(}, "gbytes": {"data": )" + gbytes +
         R"(}, "metadata": {"CONFIG": {"ERT_GPU": [)" + gpu + "]}}}}";
}

TEST(Ert, FixtureBecomesAChipThatLoads) {
  const std::string yaml = io::ert_chip_yaml(io::read_text_file(kFile, "ert"), "roofline.json", all_levels());
  const hw::ChipSpec c = io::parse_chip_yaml(yaml, "ert.yaml");
  EXPECT_EQ(c.name, "ert-node-07.example");  // HOSTNAME[0], lower case
  EXPECT_EQ(c.kind, "cpu");                  // ERT_GPU [false]
  // ["GFLOPs", 320.25]: ERT's default precision is double.
  EXPECT_DOUBLE_EQ(c.peak(hw::Unit::matrix, DType::fp64), 320.25e9);
  EXPECT_DOUBLE_EQ(c.peak(hw::Unit::vector, DType::fp64), 320.25e9);
  EXPECT_EQ(c.peak(hw::Unit::matrix, DType::fp32), 0.0);
  // Levels L1 1500, L2 800, L3 400, DRAM 90.5 GB/s, listed fastest first: main memory
  // comes first here, then the caches outermost first.
  ASSERT_EQ(c.memory.size(), 4u);
  EXPECT_EQ(c.memory[0].name, "DRAM");
  EXPECT_DOUBLE_EQ(c.memory[0].bandwidth_Bps, 90.5e9);
  EXPECT_DOUBLE_EQ(c.memory[0].capacity_bytes, 256e9);
  EXPECT_EQ(c.memory[1].name, "L3");  // --capacity l3=... matches case-insensitively
  EXPECT_DOUBLE_EQ(c.memory[1].capacity_bytes, 67108864.0);
  EXPECT_EQ(c.memory[3].name, "L1");
  EXPECT_DOUBLE_EQ(c.memory[3].bandwidth_Bps, 1.5e12);
  EXPECT_DOUBLE_EQ(c.memory[3].capacity_bytes, 1572864.0);
  // Ridge: 320.25 GFLOP/s over 90.5 GB/s = 3.5387 FLOPs/byte.
  EXPECT_NEAR(c.ridge_flops_per_byte(DType::fp64), 320.25 / 90.5, 1e-12);
}

TEST(Ert, PrecisionFromTheLabelAndTheBestOfEach) {
  io::ErtImportOptions o;
  o.name = "box";
  o.capacities = {{"HBM", 16e9}};
  const std::string yaml =
      io::ert_chip_yaml(ert(R"([["FP32 GFLOPs", 100], ["FP64 GFLOPs", 50], ["FP32 GFLOPs", 120], ["FP16 GFLOPs", 400]])",
                            R"([["HBM", 700]])", "true"),
                        "gpu.json", o);
  const hw::ChipSpec c = io::parse_chip_yaml(yaml, "gpu.yaml");
  EXPECT_EQ(c.name, "box");
  EXPECT_EQ(c.kind, "gpu");
  EXPECT_DOUBLE_EQ(c.peak(hw::Unit::vector, DType::fp32), 120e9);  // the better of 100 and 120
  EXPECT_DOUBLE_EQ(c.peak(hw::Unit::vector, DType::fp64), 50e9);
  EXPECT_DOUBLE_EQ(c.peak(hw::Unit::vector, DType::fp16), 400e9);
  EXPECT_DOUBLE_EQ(c.main_bandwidth_Bps(), 700e9);
}

void expect_error(const std::string& text, const io::ErtImportOptions& o, const std::string& needle) {
  try {
    (void)io::ert_chip_yaml(text, "r.json", o);
    ADD_FAILURE() << "no error; expected one naming " << needle;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Ert, BadInput) {
  io::ErtImportOptions dram;
  dram.capacities = {{"DRAM", 1e9}};
  expect_error("{", dram, "not JSON");
  expect_error("[]", dram, "JSON object");
  expect_error("{}", dram, "empirical.gflops.data is missing");
  expect_error(ert("[]", R"([["DRAM", 1]])"), dram, "empirical.gflops.data is empty");
  expect_error(ert(R"([["GFLOPs", -3]])", R"([["DRAM", 1]])"), dram, "positive");
  expect_error(ert(R"([["GFLOPs", 3]])", R"([["DRAM"]])"), dram, "is not [name, number]");
  expect_error(ert(R"([["GFLOPs", 3]])", R"([["L0", 9], ["L1", 5], ["L2", 4], ["L3", 2], ["DRAM", 1]])"), dram,
               "5 levels");
  expect_error(ert(R"([["GFLOPs", 3]])", R"([["L1", 5], ["DRAM", 1]])"), dram, "no capacity for L1");
  io::ErtImportOptions typo;
  typo.capacities = {{"DRAM", 1e9}, {"L9", 1}};
  expect_error(ert(R"([["GFLOPs", 3]])", R"([["DRAM", 1]])"), typo, "L9 is not a level");
  io::ErtImportOptions bad_name = dram;
  bad_name.name = "Not A Name";
  expect_error(ert(R"([["GFLOPs", 3]])", R"([["DRAM", 1]])"), bad_name, "name");
  // A precision ERT does not measure is an error, not an fp64 peak; a level named twice too
  // (the duplicate would have become main memory).
  expect_error(ert(R"([["FP7 GFLOPs", 3]])", R"([["DRAM", 1]])"), dram, "'FP7 GFLOPs' names a precision");
  expect_error(ert(R"([["BF16 GFLOPs", 3]])", R"([["DRAM", 1]])"), dram, "BF16");
  expect_error(ert(R"([["GFLOPs", 3]])", R"([["DRAM", 2], ["DRAM", 1]])"), dram, "names the level DRAM twice");
  // A rate past any machine is named where ERT put it, not under a key of the YAML written.
  expect_error(ert(R"([["GFLOPs", 3]])", R"([["DRAM", 1e308]])"), dram, "empirical.gbytes.data");
}

}  // namespace
}  // namespace ridgeline
