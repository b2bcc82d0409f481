// Smoke test of the installed package: estimate one matmul on a catalog chip.
#include <ridgeline/io/hardware_file.hpp>
#include <ridgeline/ops/estimate.hpp>
#include <ridgeline/ops/matmul.hpp>
#include <cmath>
#include <cstdio>
int main() {
  using namespace ridgeline;
  const auto chip = io::catalog_chip("h100-sxm");
  ops::MatmulShape s;
  s.m = s.k = s.n = 4096;
  const auto e = ops::estimate(ops::matmul_cost(s), chip);
  // 2·4096³ = 137438953472 FLOPs.
  std::printf("flops=%.0f bound=%s t_lower=%g s\n", e.flops, std::string(ops::name(e.bound)).c_str(), e.t_lower_s);
  return e.flops == 137438953472.0 ? 0 : 1;
}
