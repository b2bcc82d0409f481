#include "ridgeline/io/hardware_file.hpp"

#include <gtest/gtest.h>

#include <string>

#include "ridgeline/core/error.hpp"
#include "ridgeline/ops/estimate.hpp"

namespace ridgeline::io {
namespace {

constexpr const char* kMinimal = R"(schema_version: 1
name: toy
vendor: test
kind: gpu
matrix_peak: {bf16: 100 TFLOPS}
vector_peak: {fp32: 10 TFLOPS}
memory:
  - {name: HBM, bandwidth: 1 TB/s, capacity: 16 GB}
launch_overhead: 2 us
)";

std::string chip_error_of(const std::string& text) {
  try {
    parse_chip_yaml(text, "toy.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(HardwareFile, ParsesAMinimalFile) {
  hw::ChipSpec c = parse_chip_yaml(kMinimal, "toy.yaml");
  EXPECT_EQ(c.name, "toy");
  EXPECT_DOUBLE_EQ(c.peak(hw::Unit::matrix, DType::bf16), 100e12);
  EXPECT_DOUBLE_EQ(c.peak(hw::Unit::vector, DType::fp32), 10e12);
  EXPECT_DOUBLE_EQ(c.main_bandwidth_Bps(), 1e12);
  EXPECT_DOUBLE_EQ(c.main_capacity_bytes(), 16e9);
  EXPECT_DOUBLE_EQ(c.launch_overhead_s, 2e-6);
  EXPECT_DOUBLE_EQ(c.ridge_flops_per_byte(DType::bf16), 100.0);  // 100e12 / 1e12
  EXPECT_EQ(c.sparse_factor, 1.0);
  EXPECT_FALSE(c.write_allocate);  // a GPU writes whole sectors: no read for ownership
  EXPECT_TRUE(c.links.empty());
}

// A profile's device name (torch's, the driver's) finds its catalog chip: the A100s by their
// memory, the H100s by PCIe or not; AMD's two gfx942 parts by their names; anything else none.
TEST(HardwareFile, ADeviceNameFindsItsCatalogChip) {
  EXPECT_EQ(catalog_name_for_device("NVIDIA A100-SXM4-80GB", 85e9), "a100-80gb");
  EXPECT_EQ(catalog_name_for_device("NVIDIA A100-SXM4-40GB", 42e9), "a100-40gb");
  EXPECT_EQ(catalog_name_for_device("NVIDIA H100 PCIe", 85e9), "h100-pcie");
  EXPECT_EQ(catalog_name_for_device("NVIDIA H100 80GB HBM3", 85e9), "h100-sxm");
  EXPECT_EQ(catalog_name_for_device("AMD Instinct MI300X", 206e9), "mi300x");
  EXPECT_EQ(catalog_name_for_device("AMD Instinct MI325X", 275e9), "mi325x");
  EXPECT_EQ(catalog_name_for_device("AMD Instinct MI250X", 68e9), "");
}

// write_allocate: true or false, nothing else; the CPU in the catalog allocates.
TEST(HardwareFile, WriteAllocate) {
  EXPECT_TRUE(parse_chip_yaml(std::string(kMinimal) + "write_allocate: true\n", "toy.yaml").write_allocate);
  EXPECT_FALSE(parse_chip_yaml(std::string(kMinimal) + "write_allocate: false\n", "toy.yaml").write_allocate);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "write_allocate: yes\n").find("write_allocate: 'yes' must be true or false"),
            std::string::npos);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "write_allocate: [true]\n").find("write_allocate"), std::string::npos);
  EXPECT_TRUE(catalog_chip("epyc-9654").write_allocate);
  EXPECT_FALSE(catalog_chip("h100-sxm").write_allocate);
}

// sms: the multiprocessors GEMM tiles run over, a positive count; it round-trips through
// chip_yaml, and a fitted gemm matrix figure turns the tiling off (ChipSpec::gemm_sms).
TEST(HardwareFile, Multiprocessors) {
  hw::ChipSpec c = parse_chip_yaml(std::string(kMinimal) + "sms: 132\n", "toy.yaml");
  EXPECT_EQ(c.sms, 132);
  EXPECT_EQ(c.gemm_sms(), 132);
  EXPECT_EQ(parse_chip_yaml(chip_yaml(c, "", ""), "back.yaml").sms, 132);
  EXPECT_EQ(parse_chip_yaml(kMinimal, "toy.yaml").sms, 0);
  c.efficiency.kernel[static_cast<int>(hw::KernelClass::gemm)].matrix = 0.7;
  EXPECT_EQ(c.gemm_sms(), 0);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "sms: 0\n").find("sms"), std::string::npos);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "sms: 1.5\n").find("sms"), std::string::npos);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "sms: 100000\n").find("sms: 100000: expected at most 65536"), std::string::npos);
}

// gemm_split: split-k (the default) or stream-k, nothing else; it round-trips through
// chip_yaml; the catalog's Hopper and Blackwell parts say stream-k, the A100 keeps split-k.
TEST(HardwareFile, GemmSplit) {
  EXPECT_EQ(parse_chip_yaml(kMinimal, "toy.yaml").gemm_split, hw::GemmSplit::split_k);
  EXPECT_EQ(parse_chip_yaml(std::string(kMinimal) + "gemm_split: split-k\n", "toy.yaml").gemm_split, hw::GemmSplit::split_k);
  const hw::ChipSpec c = parse_chip_yaml(std::string(kMinimal) + "sms: 132\ngemm_split: stream-k\n", "toy.yaml");
  EXPECT_EQ(c.gemm_split, hw::GemmSplit::stream_k);
  EXPECT_EQ(parse_chip_yaml(chip_yaml(c, "", ""), "back.yaml").gemm_split, hw::GemmSplit::stream_k);
  EXPECT_EQ(chip_error_of(std::string(kMinimal) + "gemm_split: streamk\n"), "toy.yaml: gemm_split: 'streamk': expected split-k or stream-k");
  for (const char* chip : {"h100-sxm", "h100-pcie", "h200", "b200", "gb200-nvl72"}) {
    EXPECT_EQ(catalog_chip(chip).gemm_split, hw::GemmSplit::stream_k) << chip;
  }
  EXPECT_EQ(catalog_chip("a100-80gb").gemm_split, hw::GemmSplit::split_k);
}

// Aliases cannot make a small file a large document: a 60,000-character string and 20,000
// aliases of it in `sources` (a 141 kB file expanding to 1.2 GB) is refused, in one line.
TEST(HardwareFile, AliasAmplificationIsRefused) {
  std::string text = std::string(kMinimal) + "notes: &big \"" + std::string(60000, 'x') + "\"\nsources:\n";
  for (int i = 0; i < 20000; ++i) text += "  - *big\n";
  const std::string e = chip_error_of(text);
  EXPECT_NE(e.find("aliases expand it"), std::string::npos) << e.substr(0, 200);
  EXPECT_EQ(e.find('\n'), std::string::npos);
  // A self-referencing alias (yaml-cpp makes it a cycle) ends too.
  EXPECT_FALSE(chip_error_of(std::string(kMinimal) + "sources: &s [a, *s]\n").empty());
  // An alias or two within the limits is fine.
  EXPECT_EQ(parse_chip_yaml(std::string(kMinimal) + "notes: &n \"same\"\nsources: [*n, *n]\n", "toy.yaml").sources.size(), 2u);
}

// price_per_hour: USD per chip-hour, written back by chip_yaml; none in the catalog.
TEST(HardwareFile, PricePerHour) {
  EXPECT_DOUBLE_EQ(parse_chip_yaml(std::string(kMinimal) + "price_per_hour: 2.69/h\n", "toy.yaml").usd_per_hour, 2.69);
  EXPECT_DOUBLE_EQ(parse_chip_yaml(std::string(kMinimal) + "price_per_hour: $1825/month\n", "toy.yaml").usd_per_hour, 2.5);
  hw::ChipSpec c = parse_chip_yaml(std::string(kMinimal) + "price_per_hour: 2.69 USD/h\n", "toy.yaml");
  EXPECT_DOUBLE_EQ(parse_chip_yaml(chip_yaml(c, "", ""), "back.yaml").usd_per_hour, 2.69);
  EXPECT_EQ(parse_chip_yaml(kMinimal, "toy.yaml").usd_per_hour, 0);
  EXPECT_EQ(catalog_chip("h100-sxm").usd_per_hour, 0);
  const std::string e = chip_error_of(std::string(kMinimal) + "price_per_hour: 2.69\n");
  EXPECT_NE(e.find("toy.yaml: price_per_hour"), std::string::npos) << e;
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "price_per_hour: 2 EUR/h\n").find("USD"), std::string::npos);
}

// `measured.threads` (written by `ridgeline measure`): the threads the ceilings were
// measured with; absent in the catalog (0); a whole number >= 1 or a one-line error.
TEST(HardwareFile, MeasuredThreads) {
  EXPECT_EQ(parse_chip_yaml(std::string(kMinimal) + "measured:\n  threads: 3\n  date: \"x\"\n", "toy.yaml").measured_threads, 3);
  EXPECT_EQ(parse_chip_yaml(std::string(kMinimal) + "measured:\n  date: \"x\"\n", "toy.yaml").measured_threads, 0);
  EXPECT_EQ(catalog_chip("epyc-9654").measured_threads, 0);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "measured:\n  threads: two\n").find("measured.threads"), std::string::npos);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "measured:\n  threads: 0\n").find("measured.threads"), std::string::npos);
}

// chip_yaml writes what parse_chip_yaml reads back to the same chip: every catalog chip,
// and one with per-class efficiencies.
TEST(HardwareFile, ChipYamlRoundTrips) {
  auto same = [](const hw::ChipSpec& a, const hw::ChipSpec& b) {
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.display_name, b.display_name);
    EXPECT_EQ(a.vendor, b.vendor);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.matrix_flops_per_s, b.matrix_flops_per_s);
    EXPECT_EQ(a.vector_flops_per_s, b.vector_flops_per_s);
    EXPECT_EQ(a.sparse_factor, b.sparse_factor);
    EXPECT_EQ(a.write_allocate, b.write_allocate);
    ASSERT_EQ(a.memory.size(), b.memory.size());
    for (size_t i = 0; i < a.memory.size(); ++i) {
      EXPECT_EQ(a.memory[i].name, b.memory[i].name);
      EXPECT_EQ(a.memory[i].bandwidth_Bps, b.memory[i].bandwidth_Bps);
      EXPECT_EQ(a.memory[i].capacity_bytes, b.memory[i].capacity_bytes);
    }
    ASSERT_EQ(a.links.size(), b.links.size());
    for (size_t i = 0; i < a.links.size(); ++i) {
      EXPECT_EQ(a.links[i].name, b.links[i].name);
      EXPECT_EQ(a.links[i].scope, b.links[i].scope);
      EXPECT_EQ(a.links[i].bandwidth_Bps, b.links[i].bandwidth_Bps);
      EXPECT_EQ(a.links[i].count, b.links[i].count);
      EXPECT_EQ(a.links[i].latency_s, b.links[i].latency_s);
    }
    EXPECT_EQ(a.launch_overhead_s, b.launch_overhead_s);
    EXPECT_EQ(a.chips_per_node, b.chips_per_node);
    EXPECT_EQ(a.efficiency.matrix, b.efficiency.matrix);
    EXPECT_EQ(a.efficiency.memory, b.efficiency.memory);
    EXPECT_EQ(a.efficiency.overhead_s, b.efficiency.overhead_s);
    EXPECT_EQ(a.efficiency.pdl_overlap_s, b.efficiency.pdl_overlap_s);
    EXPECT_EQ(a.efficiency.kernel, b.efficiency.kernel);
    EXPECT_EQ(a.sources, b.sources);
  };
  for (const auto& e : catalog()) {
    const hw::ChipSpec c = catalog_chip(e.name);
    same(c, parse_chip_yaml(chip_yaml(c, "a note", "measured:\n  tool: test\n"), "back.yaml"));
  }
  hw::ChipSpec c = parse_chip_yaml(kMinimal, "toy.yaml");
  c.efficiency.kernel[static_cast<int>(hw::KernelClass::gemm)] = {0.7, 0, 0.85, 0, 3.5e-6};
  c.efficiency.kernel[static_cast<int>(hw::KernelClass::collective)] = {0, 0, 0, 0.6, 1e-5};
  c.display_name = "quote \" and backslash \\";
  const hw::ChipSpec back = parse_chip_yaml(chip_yaml(c, "", ""), "back.yaml");
  same(c, back);
  EXPECT_DOUBLE_EQ(back.efficiency.kernel[static_cast<int>(hw::KernelClass::gemm)].overhead_s, 3.5e-6);
}

TEST(HardwareFile, KernelClassEfficiencies) {
  const std::string text = std::string(kMinimal) +
                           "efficiency:\n  matrix: 0.8\n  gemm: {matrix: 0.7, overhead: 4 us}\n  collective: {link: 0.5}\n";
  const hw::ChipSpec c = parse_chip_yaml(text, "toy.yaml");
  EXPECT_DOUBLE_EQ(c.efficiency.matrix, 0.8);
  EXPECT_DOUBLE_EQ(c.efficiency.kernel[static_cast<int>(hw::KernelClass::gemm)].matrix, 0.7);
  EXPECT_DOUBLE_EQ(c.efficiency.kernel[static_cast<int>(hw::KernelClass::gemm)].overhead_s, 4e-6);
  EXPECT_DOUBLE_EQ(c.efficiency.kernel[static_cast<int>(hw::KernelClass::collective)].link, 0.5);
  // attention_backward takes attention's figures, field by field, where it gives none.
  const hw::ChipSpec b = parse_chip_yaml(std::string(kMinimal) +
                                         "efficiency:\n  attention: {matrix: 0.6, overhead: 2 us}\n  attention_backward: {matrix: 0.4}\n",
                                         "toy.yaml");
  const hw::ClassEfficiency ab = hw::class_efficiency(b.efficiency, hw::KernelClass::attention_backward);
  EXPECT_DOUBLE_EQ(ab.matrix, 0.4);
  EXPECT_DOUBLE_EQ(ab.overhead_s, 2e-6);
  EXPECT_DOUBLE_EQ(parse_chip_yaml(chip_yaml(b, "", ""), "back.yaml").efficiency.kernel[static_cast<int>(hw::KernelClass::attention_backward)].matrix, 0.4);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "efficiency: {gemm: {matrix: 1.5}}\n").find("efficiency.gemm.matrix"),
            std::string::npos);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "efficiency: {gemm: {speed: 1}}\n").find("efficiency.gemm"), std::string::npos);
  // An overlap share under 0.5 would be faster than the max of the parts it overlaps.
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "efficiency: {gemm: {overlap: 0.4}}\n").find("efficiency.gemm.overlap"),
            std::string::npos);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "efficiency: {gemm: {overhead: 4}}\n").find("efficiency.gemm.overhead"),
            std::string::npos);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "efficiency: {kernels: {}}\n").find("kernels"), std::string::npos);
  // What programmatic dependent launch hides of a boundary (docs/cost-model.md#pdl): a time, at
  // most 1 ms, written back as read.
  const hw::ChipSpec p = parse_chip_yaml(std::string(kMinimal) + "efficiency:\n  overhead: 0.8 us\n  pdl_overlap: 0.5 us\n", "toy.yaml");
  EXPECT_DOUBLE_EQ(p.efficiency.pdl_overlap_s, 0.5e-6);
  EXPECT_DOUBLE_EQ(parse_chip_yaml(chip_yaml(p, "", ""), "back.yaml").efficiency.pdl_overlap_s, 0.5e-6);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "efficiency: {pdl_overlap: 2 ms}\n")
                .find("efficiency.pdl_overlap: 0.002 s per kernel: expected at most 1 ms"),
            std::string::npos);
  // CUDA's, from compute capability 9.0: an A100's file (sm_80) may not carry it.
  std::string a100 = std::string(kMinimal) + "efficiency: {pdl_overlap: 0.5 us}\n";
  a100.replace(a100.find("vendor: test"), 12, "vendor: nvidia\narch: sm_80");
  EXPECT_NE(chip_error_of(a100).find("efficiency.pdl_overlap: 5e-07 s on arch sm_80: programmatic dependent launch needs an NVIDIA GPU"),
            std::string::npos)
      << chip_error_of(a100);
  // Nor a chip that names no arch and is no GPU NVIDIA's may be: a TPU.
  std::string tpu = std::string(kMinimal) + "efficiency: {pdl_overlap: 0.5 us}\n";
  tpu.replace(tpu.find("vendor: test\nkind: gpu"), 22, "vendor: google\nkind: tpu");
  EXPECT_NE(chip_error_of(tpu).find("efficiency.pdl_overlap: 5e-07 s on a google tpu naming no arch: programmatic dependent launch needs"),
            std::string::npos)
      << chip_error_of(tpu);
}

TEST(HardwareFile, MeasuredMatmulRates) {
  const hw::ChipSpec c = parse_chip_yaml(std::string(kMinimal) + "matmul_achievable: {bf16: 80 TFLOPS}\n", "toy.yaml");
  EXPECT_DOUBLE_EQ(c.matmul_achievable_flops_per_s[index(DType::bf16)], 80e12);
  EXPECT_DOUBLE_EQ(parse_chip_yaml(chip_yaml(c, "", ""), "back.yaml").matmul_achievable_flops_per_s[index(DType::bf16)], 80e12);
  // Above the peak, a dtype without a peak, a missing unit: named by key.
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "matmul_achievable: {bf16: 120 TFLOPS}\n").find("matmul_achievable.bf16: 1.2e+14 FLOP/s exceeds the bf16 matrix peak"),
            std::string::npos);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "matmul_achievable: {fp8_e4m3: 80 TFLOPS}\n").find("matmul_achievable.fp8_e4m3: the chip has no fp8_e4m3 matrix peak"),
            std::string::npos);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "matmul_achievable: {bf16: 80}\n").find("matmul_achievable.bf16"), std::string::npos);
}

// The gemm class's `matmul`: its share of the measured matmul rate, which it round-trips and
// a refining class does not take; the gemm class's rate is 80 TFLOP/s x 0.9 = 72 of the 100
// TFLOP/s peak (Rates: 1 / 0.72 the peak's time), its tiling left on; gemm_expert keeps the
// measured rate (1 / 0.8) and gemm_scaled its own matrix fraction; any other class, or beside
// a matrix fraction, is refused.
TEST(HardwareFile, AGemmClassRunsAtAShareOfTheMeasuredMatmulRate) {
  const hw::ChipSpec c = parse_chip_yaml(
      std::string(kMinimal) + "sms: 132\nmatmul_achievable: {bf16: 80 TFLOPS}\nefficiency:\n  gemm: {matmul: 0.9}\n  gemm_scaled: {matrix: 0.3}\n", "toy.yaml");
  EXPECT_DOUBLE_EQ(c.efficiency.kernel[static_cast<int>(hw::KernelClass::gemm)].matmul, 0.9);
  EXPECT_DOUBLE_EQ(parse_chip_yaml(chip_yaml(c, "", ""), "back.yaml").efficiency.kernel[static_cast<int>(hw::KernelClass::gemm)].matmul, 0.9);
  EXPECT_EQ(hw::class_efficiency(c.efficiency, hw::KernelClass::gemm_expert).matmul, 0);
  EXPECT_EQ(c.gemm_sms(), 132);
  const ops::Rates r(c);
  EXPECT_NEAR(r.achievable[static_cast<int>(hw::KernelClass::gemm)].inv_matrix[index(DType::bf16)], 1 / 0.72, 1e-15);
  EXPECT_NEAR(r.achievable[static_cast<int>(hw::KernelClass::gemm_expert)].inv_matrix[index(DType::bf16)], 1 / 0.8, 1e-15);
  EXPECT_NEAR(r.achievable[static_cast<int>(hw::KernelClass::gemm_scaled)].inv_matrix[index(DType::bf16)], 1 / 0.3, 1e-15);
  EXPECT_EQ(chip_error_of(std::string(kMinimal) + "efficiency: {gemm_expert: {matmul: 0.9}}\n"),
            "toy.yaml: efficiency.gemm_expert.matmul: 0.9: only the gemm class (the BLAS library's GEMMs) runs at a share of the measured matmul rate");
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "efficiency: {gemm: {matrix: 0.7, matmul: 0.9}}\n").find("efficiency.gemm.matmul: 0.9: the class's own matrix"),
            std::string::npos);
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "efficiency: {gemm: {matmul: 1.2}}\n").find("efficiency.gemm.matmul"), std::string::npos);
}

// The attention class's `tile_keys`: the work of a flash prefill's query tile, which it
// round-trips and neither a refining class nor any other class takes; out of range, refused.
TEST(HardwareFile, TheAttentionClassCarriesTheWorkOfAQueryTile) {
  const hw::ChipSpec c = parse_chip_yaml(std::string(kMinimal) + "efficiency:\n  attention: {matrix: 0.6, tile_keys: 228}\n", "toy.yaml");
  EXPECT_EQ(c.efficiency.kernel[static_cast<int>(hw::KernelClass::attention)].tile_keys, 228);
  EXPECT_EQ(parse_chip_yaml(chip_yaml(c, "", ""), "back.yaml").efficiency.kernel[static_cast<int>(hw::KernelClass::attention)].tile_keys, 228);
  EXPECT_EQ(hw::class_efficiency(c.efficiency, hw::KernelClass::attention_backward).tile_keys, 0);
  EXPECT_EQ(hw::class_efficiency(c.efficiency, hw::KernelClass::attention_decode).tile_keys, 0);
  EXPECT_EQ(chip_error_of(std::string(kMinimal) + "efficiency: {gemm: {tile_keys: 100}}\n"),
            "toy.yaml: efficiency.gemm.tile_keys: 100: only the attention class (a flash prefill's forward) runs in query tiles");
  EXPECT_EQ(chip_error_of(std::string(kMinimal) + "efficiency: {attention: {tile_keys: -1}}\n"),
            "toy.yaml: efficiency.attention.tile_keys: -1: expected 0 to 65536 keys a tile");
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "efficiency: {attention: {tile_keys: many}}\n").find("efficiency.attention.tile_keys"),
            std::string::npos);
}

// A GEMM class's `fill_k`: the columns of K each tile's loop costs beyond its own, its class's
// alone (a refining class does not take it), round-tripped; on a class that runs no GEMM tiles,
// or out of range, refused.
TEST(HardwareFile, AGemmClassCarriesItsTilesFill) {
  const hw::ChipSpec c = parse_chip_yaml(std::string(kMinimal) + "efficiency:\n  gemm_scaled_deepgemm: {matrix: 0.8, fill_k: 500}\n", "toy.yaml");
  EXPECT_EQ(c.efficiency.kernel[static_cast<int>(hw::KernelClass::gemm_scaled_deepgemm)].fill_k, 500);
  EXPECT_EQ(parse_chip_yaml(chip_yaml(c, "", ""), "back.yaml").efficiency.kernel[static_cast<int>(hw::KernelClass::gemm_scaled_deepgemm)].fill_k, 500);
  const hw::ChipSpec g = parse_chip_yaml(std::string(kMinimal) + "efficiency:\n  gemm: {fill_k: 64}\n", "toy.yaml");
  EXPECT_EQ(hw::class_efficiency(g.efficiency, hw::KernelClass::gemm_expert).fill_k, 0);
  EXPECT_EQ(chip_error_of(std::string(kMinimal) + "efficiency: {norm: {fill_k: 100}}\n"),
            "toy.yaml: efficiency.norm.fill_k: 100: only a GEMM class's tiles run a K loop");
  EXPECT_EQ(chip_error_of(std::string(kMinimal) + "efficiency: {gemm: {fill_k: 1e9}}\n"),
            "toy.yaml: efficiency.gemm.fill_k: 1000000000: expected 0 to 65536 columns of K a tile");
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "efficiency: {gemm: {fill_k: lots}}\n").find("efficiency.gemm.fill_k"), std::string::npos);
}

// A GEMM class's `k_loop`: the time a column of K of one tile's K loop takes at least, its
// class's alone, round-tripped; on a class that runs no GEMM tiles or whose GEMMs price no K
// loop (the experts') or fit a tile fill, or past 1 us, refused.
TEST(HardwareFile, AGemmClassCarriesItsKLoopTime) {
  const hw::ChipSpec c = parse_chip_yaml(std::string(kMinimal) + "efficiency:\n  gemm_scaled: {matrix: 0.3, k_loop: 1.52 ns}\n", "toy.yaml");
  EXPECT_DOUBLE_EQ(c.efficiency.kernel[static_cast<int>(hw::KernelClass::gemm_scaled)].k_loop_s, 1.52e-9);
  EXPECT_DOUBLE_EQ(parse_chip_yaml(chip_yaml(c, "", ""), "back.yaml").efficiency.kernel[static_cast<int>(hw::KernelClass::gemm_scaled)].k_loop_s, 1.52e-9);
  const hw::ChipSpec g = parse_chip_yaml(std::string(kMinimal) + "efficiency:\n  gemm: {k_loop: 2 ns}\n", "toy.yaml");
  EXPECT_EQ(hw::class_efficiency(g.efficiency, hw::KernelClass::gemm_scaled).k_loop_s, 0);
  EXPECT_EQ(chip_error_of(std::string(kMinimal) + "efficiency: {norm: {k_loop: 2 ns}}\n"),
            "toy.yaml: efficiency.norm.k_loop: '2 ns': only a dense GEMM class without a tile fill (gemm, gemm_scaled, gemm_fp8) takes a K-loop time");
  EXPECT_EQ(chip_error_of(std::string(kMinimal) + "efficiency: {gemm_expert_scaled: {k_loop: 2 ns}}\n"),
            "toy.yaml: efficiency.gemm_expert_scaled.k_loop: '2 ns': only a dense GEMM class without a tile fill (gemm, gemm_scaled, gemm_fp8) takes a K-loop time");
  EXPECT_EQ(chip_error_of(std::string(kMinimal) + "efficiency: {gemm: {k_loop: 5 us}}\n"),
            "toy.yaml: efficiency.gemm.k_loop: '5 us' a column of K: expected at most 1 us");
  EXPECT_NE(chip_error_of(std::string(kMinimal) + "efficiency: {gemm: {k_loop: slow}}\n").find("efficiency.gemm.k_loop"), std::string::npos);
}

TEST(HardwareFile, AGpuNamesItsInstructionSet) {
  // `arch`: NVIDIA's compute capability after sm_, its last digit the minor (sm_90 is 9.0,
  // sm_100 10.0, sm_89 8.9); AMD's gfx target, major then one hex digit each of minor and
  // stepping (gfx942 is 9.4, gfx90a 9.0, gfx1100 11.0).
  auto arch = [](const char* vendor, const char* a) {
    std::string t = kMinimal;
    t.replace(t.find("vendor: test"), 12, std::string("vendor: ") + vendor);
    return t + "arch: " + a + "\n";
  };
  const hw::ChipSpec h = parse_chip_yaml(arch("nvidia", "sm_90"), "toy.yaml");
  EXPECT_EQ(h.arch, "sm_90");
  EXPECT_EQ(parse_chip_yaml(chip_yaml(h, "", ""), "back.yaml").arch, "sm_90");
  struct Case {
    const char* text;
    hw::Arch::Isa isa;
    int major, minor;
  };
  for (const Case& c : {Case{"sm_90", hw::Arch::Isa::cuda, 9, 0}, Case{"sm_100", hw::Arch::Isa::cuda, 10, 0},
                        Case{"sm_89", hw::Arch::Isa::cuda, 8, 9}, Case{"sm_75", hw::Arch::Isa::cuda, 7, 5},
                        Case{"gfx942", hw::Arch::Isa::hip, 9, 4}, Case{"gfx90a", hw::Arch::Isa::hip, 9, 0},
                        Case{"gfx1100", hw::Arch::Isa::hip, 11, 0}, Case{"sm_90a", hw::Arch::Isa::cuda, 9, 0},
                        Case{"sm_100f", hw::Arch::Isa::cuda, 10, 0}, Case{"gfx942:sramecc+:xnack-", hw::Arch::Isa::hip, 9, 4}}) {
    SCOPED_TRACE(c.text);
    const std::optional<hw::Arch> a = hw::parse_arch(c.text);
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->isa, c.isa);
    EXPECT_EQ(a->major, c.major);
    EXPECT_EQ(a->minor, c.minor);
  }
  for (const char* bad : {"sm_9", "sm_1000", "sm_9a", "sm_", "sm_090", "sm_010", "gfx94", "gfx94g", "gfx", "gfx00a0", "gfx0942", "gfx9a2",
                          "ampere", "SM_90", ""}) {
    EXPECT_FALSE(hw::parse_arch(bad).has_value()) << bad;
  }
  EXPECT_EQ(hw::parse_arch("gfx90a")->stepping, 10);
  EXPECT_EQ(hw::parse_arch("gfx908")->stepping, 8);
  EXPECT_EQ(hw::arch_of(parse_chip_yaml(kMinimal, "toy.yaml")).isa, hw::Arch::Isa::none);
  // The vendor in any case.
  EXPECT_EQ(parse_chip_yaml(arch("NVIDIA", "sm_90"), "toy.yaml").arch, "sm_90");
  // AITER's gfx9 targets (gfx90a, gfx942, gfx950), not the MI100's gfx908 nor RDNA's gfx1100.
  hw::ChipSpec amd = parse_chip_yaml(arch("amd", "gfx942"), "toy.yaml");
  for (const auto& [target, runs] : {std::pair{"gfx942", true}, std::pair{"gfx90a", true}, std::pair{"gfx950", true},
                                     std::pair{"gfx908", false}, std::pair{"gfx1100", false}}) {
    amd.arch = target;
    EXPECT_EQ(hw::runs_aiter(amd), runs) << target;
  }
  // A GPU the engines run on ROCm (their ROCm builds, a class of their own in the validation
  // table): any HIP arch, AMD's RDNA too; an amd GPU file without one; not an NVIDIA GPU, an
  // AMD CPU, nor a GPU of no known vendor without an arch.
  EXPECT_TRUE(hw::is_rocm_gpu(amd));
  hw::ChipSpec amd_no_arch = amd;
  amd_no_arch.arch.clear();
  EXPECT_TRUE(hw::is_rocm_gpu(amd_no_arch));
  EXPECT_FALSE(hw::is_rocm_gpu(parse_chip_yaml(arch("nvidia", "sm_90"), "toy.yaml")));
  EXPECT_FALSE(hw::is_rocm_gpu(parse_chip_yaml(kMinimal, "toy.yaml")));
  hw::ChipSpec amd_cpu = amd_no_arch;
  amd_cpu.kind = "cpu";
  EXPECT_FALSE(hw::is_rocm_gpu(amd_cpu));
  EXPECT_EQ(chip_error_of(arch("nvidia", "hopper")),
            "toy.yaml: arch: 'hopper' is not an instruction set: expected sm_ and a compute capability's digits (sm_90, sm_100) or an AMD "
            "gfx target (gfx942)");
  EXPECT_EQ(chip_error_of(arch("amd", "sm_90")), "toy.yaml: arch: 'sm_90' names an NVIDIA GPU's instruction set: expected vendor nvidia and kind gpu, not amd gpu");
  EXPECT_EQ(chip_error_of(arch("test", "gfx942")), "toy.yaml: arch: 'gfx942' names an AMD GPU's instruction set: expected vendor amd and kind gpu, not test gpu");
  std::string tpu = arch("nvidia", "sm_90");
  tpu.replace(tpu.find("kind: gpu"), 9, "kind: tpu");
  EXPECT_EQ(chip_error_of(tpu), "toy.yaml: arch: 'sm_90' names an NVIDIA GPU's instruction set: expected vendor nvidia and kind gpu, not nvidia tpu");
}

TEST(HardwareFile, TopologyAndLinkEfficiency) {
  // Version 1 files (kMinimal) read with the default topology: one switched domain.
  EXPECT_EQ(parse_chip_yaml(kMinimal, "toy.yaml").topology, hw::TopologySpec{});
  std::string v2 = kMinimal;
  v2.replace(v2.find("schema_version: 1"), 17, "schema_version: 2");
  const std::string links = "links:\n  - {name: X, scope: node, bandwidth: 10 GB/s, count: 4, latency: 1 us, efficiency: 0.7}\n";
  const hw::ChipSpec c =
      parse_chip_yaml(v2 + links + "topology: {fabric: torus, torus_dims: 2, max_slice: 64, wrap_multiple: 4, library: nccl}\n", "t.yaml");
  EXPECT_EQ(c.topology.fabric, hw::Fabric::torus);
  EXPECT_EQ(c.topology.library, hw::CollectiveLibrary::nccl);
  const hw::ChipSpec sfu = parse_chip_yaml(v2 + "special_function_rate: 2 TFLOPS\n", "s.yaml");
  EXPECT_DOUBLE_EQ(sfu.special_function_rate, 2e12);
  EXPECT_DOUBLE_EQ(parse_chip_yaml(chip_yaml(sfu, "", ""), "back.yaml").special_function_rate, 2e12);
  EXPECT_NE(chip_error_of(v2 + "special_function_rate: fast\n").find("special_function_rate"), std::string::npos);
  EXPECT_EQ(c.topology.torus_dims, 2);
  EXPECT_EQ(c.topology.max_slice, 64);
  EXPECT_DOUBLE_EQ(c.links[0].efficiency, 0.7);
  // Written and read back unchanged.
  const hw::ChipSpec back = parse_chip_yaml(chip_yaml(c, "", ""), "back.yaml");
  EXPECT_EQ(back.topology, c.topology);
  EXPECT_DOUBLE_EQ(back.links[0].efficiency, 0.7);
  EXPECT_NE(chip_error_of(v2 + "topology: {fabric: ring}\n").find("topology.fabric"), std::string::npos);
  EXPECT_NE(chip_error_of(v2 + "topology: {fabric: switched, library: mpi}\n").find("topology.library"), std::string::npos);
  EXPECT_NE(chip_error_of(v2 + "topology: {fabric: torus}\n").find("torus_dims"), std::string::npos);
  EXPECT_NE(chip_error_of(v2 + "topology: {fabric: mesh, in_switch_reduction: true}\n").find("in_switch_reduction"), std::string::npos);
  EXPECT_NE(chip_error_of(v2 + "topology: {fabric: switched, torus_dims: 3}\n").find("torus"), std::string::npos);
  EXPECT_NE(chip_error_of(v2 + "topology: {fabric: switched, domain: 0}\n").find("topology.domain"), std::string::npos);
  EXPECT_NE(chip_error_of(v2 + links.substr(0, links.size() - 5) + "1.5}\n").find("links[0].efficiency"), std::string::npos);
}

TEST(HardwareFile, ErrorsNameTheKeyPath) {
  std::string base = kMinimal;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_NE(chip_error_of(base + "colour: red\n").find("colour: unknown key"), std::string::npos);
  // An efficiency key that is no figure and no kernel class: the six chip-wide figures, then
  // every class but `other`, in hw::KernelClass's order.
  EXPECT_NE(chip_error_of(base + "efficiency: {gemm_experts: {matrix: 0.5}}\n")
                .find("efficiency.gemm_experts: unknown key: expected one of matrix, vector, memory, link, overhead, pdl_overlap, gemm, attention, "
                      "pointwise, collective, attention_backward, attention_decode, gemm_expert, norm, sampling, allreduce_custom, "
                      "gemm_scaled, gemm_scaled_deepgemm, gemm_expert_scaled"),
            std::string::npos);
  EXPECT_NE(chip_error_of(with("bandwidth: 1 TB/s", "bandwidth: 1")).find("memory[0].bandwidth"), std::string::npos);
  EXPECT_NE(chip_error_of(with("bandwidth: 1 TB/s", "bandwidth: 0 TB/s")).find("greater than zero"), std::string::npos);
  EXPECT_NE(chip_error_of(with("bandwidth: 1 TB/s", "bandwidth: nan TB/s")).find("memory[0].bandwidth"), std::string::npos);
  EXPECT_NE(chip_error_of(with("bf16: 100 TFLOPS", "bf17: 100 TFLOPS")).find("matrix_peak.bf17"), std::string::npos);
  EXPECT_NE(chip_error_of(with("kind: gpu", "kind: fpga")).find("kind"), std::string::npos);
  EXPECT_NE(chip_error_of(with("schema_version: 1", "schema_version: 3")).find("schema_version"), std::string::npos);
  EXPECT_NE(chip_error_of(with("launch_overhead: 2 us\n", "")).find("launch_overhead: required"), std::string::npos);
  EXPECT_NE(chip_error_of(with("{name: HBM, bandwidth: 1 TB/s, capacity: 16 GB}", "{name: HBM, bandwidth: 1 TB/s, capacity: 16 GB, speed: 3}"))
                .find("memory[0].speed"),
            std::string::npos);
  EXPECT_NE(chip_error_of("memory: [unclosed").find("malformed YAML"), std::string::npos);
  EXPECT_NE(chip_error_of("- a\n- b\n").find("expected a mapping"), std::string::npos);
  EXPECT_NE(chip_error_of(std::string(100, '[')).find("nesting"), std::string::npos);
  EXPECT_NE(chip_error_of(base + "name: again\n").find("duplicate key"), std::string::npos);
}

TEST(HardwareFile, EveryErrorIsOneLineNamingTheFile) {
  for (const char* bad : {"", "schema_version: 1", "a: [1, {b: ]", "\t\t", "name: x\nname: y"}) {
    std::string e = chip_error_of(bad);
    EXPECT_EQ(e.rfind("toy.yaml", 0), 0u) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(Catalog, HasTheRequiredChipsWithSources) {
  auto entries = catalog();
  for (const char* need : {"a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "b200", "l40s", "mi300x", "tpu-v4",
                           "tpu-v5e", "tpu-v5p", "tpu-v6e"}) {
    bool found = false;
    for (const auto& e : entries) found |= e.name == need;
    EXPECT_TRUE(found) << need;
  }
  bool cpu = false;
  for (const auto& e : entries) {
    hw::ChipSpec c = catalog_chip(e.name);
    EXPECT_FALSE(c.sources.empty()) << e.name;
    EXPECT_GT(c.main_bandwidth_Bps(), 0) << e.name;
    EXPECT_GT(c.peak(hw::Unit::vector, DType::fp32), 0) << e.name << " needs an fp32 vector rate for pointwise ops";
    cpu |= c.kind == "cpu";
  }
  EXPECT_TRUE(cpu);
}

TEST(Catalog, NamesAreCaseInsensitiveAndUnknownNamesListTheCatalog) {
  EXPECT_EQ(catalog_chip("H100-SXM").name, "h100-sxm");
  try {
    catalog_chip("h300");
    FAIL();
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("h300"), std::string::npos);
    EXPECT_NE(m.find("tpu-v5e"), std::string::npos);
  }
}

TEST(Catalog, DenseAndSparsePeaksAreKeptApart) {
  // H200 datasheet: 1979 TFLOPS bf16 "with sparsity"; the catalog stores dense 989.4.
  hw::ChipSpec h200 = catalog_chip("h200");
  EXPECT_DOUBLE_EQ(h200.peak(hw::Unit::matrix, DType::bf16), 989.4e12);
  EXPECT_DOUBLE_EQ(h200.sparse_factor, 2.0);
}

TEST(Catalog, FileOnDiskLoadsLikeTheEmbeddedCopy) {
  hw::ChipSpec a = load_chip_file(std::string(RIDGELINE_SOURCE_DIR) + "/data/hardware/nvidia/h200.yaml");
  hw::ChipSpec b = catalog_chip("h200");
  EXPECT_EQ(a.matrix_flops_per_s, b.matrix_flops_per_s);
  EXPECT_EQ(a.main_bandwidth_Bps(), b.main_bandwidth_Bps());
  EXPECT_THROW(load_chip_file("/nonexistent/chip.yaml"), InputError);
}

}  // namespace
}  // namespace ridgeline::io
