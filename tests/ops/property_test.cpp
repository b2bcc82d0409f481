// Properties of the roofline that hold for every cost and every chip (rapidcheck).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "ridgeline/analysis/single_op.hpp"
#include "ridgeline/ops/estimate.hpp"
#include "toy_chip.hpp"

namespace ridgeline::ops {
namespace {

// A random cost: matrix bf16 and vector fp32 FLOPs, main bytes, link bytes, launches.
Cost random_cost() {
  Cost c;
  c.add_flops(hw::Unit::matrix, DType::bf16, *rc::gen::inRange(0, 1 << 30));
  c.add_flops(hw::Unit::vector, DType::fp32, *rc::gen::inRange(0, 1 << 24));
  c.add_main_bytes(*rc::gen::inRange(0, 1 << 30));
  c.add_main_stores(*rc::gen::inRange(0, 1 << 28));
  c.link_bytes[0] = *rc::gen::inRange(0, 1 << 20);
  c.link_steps[0] = *rc::gen::inRange(0, 16);
  c.launches = *rc::gen::inRange(0, 4);
  return c;
}

RC_GTEST_PROP(Roofline, LowerNeverExceedsUpperOrRealistic, ()) {
  Cost c = random_cost();
  Estimate e = estimate(c, testing::toy_chip());
  RC_ASSERT(e.t_lower_s <= e.t_upper_s);
  RC_ASSERT(e.t_lower_s <= e.t_realistic_s);  // efficiencies are <= 1
  RC_ASSERT(e.t_realistic_s <= e.t_upper_s * (1 + 1e-12));
  RC_ASSERT(e.t_lower_s <= e.t_sum_at_peak_s);
  RC_ASSERT(e.fraction_of_peak <= 1.0 + 1e-12);  // nothing runs above its roof
}

RC_GTEST_PROP(Roofline, MoreFlopsOrBytesNeverFaster, ()) {
  Cost c = random_cost();
  Cost more = c;
  more.add_flops(hw::Unit::matrix, DType::bf16, *rc::gen::inRange(0, 1 << 28));
  more.add_main_bytes(*rc::gen::inRange(0, 1 << 28));
  more.link_bytes[0] += *rc::gen::inRange(0, 1 << 20);
  auto chip = testing::toy_chip();
  Estimate a = estimate(c, chip), b = estimate(more, chip);
  RC_ASSERT(b.t_lower_s >= a.t_lower_s);
  RC_ASSERT(b.t_upper_s >= a.t_upper_s);
  RC_ASSERT(b.t_realistic_s >= a.t_realistic_s);
}

// A chip whose stores allocate moves each stored byte twice: never faster, and the bytes
// it reports are the others' plus exactly the stored ones; the compact form agrees.
RC_GTEST_PROP(Roofline, WriteAllocateAddsTheStoredBytesOnce, ()) {
  Cost c = random_cost();
  auto chip = testing::toy_chip();
  Estimate plain = estimate(c, chip);
  chip.write_allocate = true;
  Estimate wa = estimate(c, chip);
  RC_ASSERT(wa.t_lower_s >= plain.t_lower_s);
  RC_ASSERT(wa.t_memory_s >= plain.t_memory_s);
  RC_ASSERT(wa.main_bytes == plain.main_bytes + c.main_store_bytes);
  RC_ASSERT(wa.write_allocate_bytes == c.main_store_bytes);
  OpCost o;
  RC_ASSERT(OpCost::compact(c, o));
  RC_ASSERT(time_parts(o, Rates(chip)).memory == time_parts(c, Rates(chip)).memory);
}

RC_GTEST_PROP(Roofline, IntensityInvariantUnderScaling, ()) {
  Cost c = random_cost();
  RC_PRE(c.main_bytes() > 0);
  const double k = *rc::gen::inRange(2, 1000);
  auto chip = testing::toy_chip();
  Estimate a = estimate(c, chip), b = estimate(c * k, chip);
  RC_ASSERT(std::abs(a.intensity_flops_per_byte - b.intensity_flops_per_byte) <= 1e-12 * a.intensity_flops_per_byte);
}

RC_GTEST_PROP(Roofline, BoundIsTheLargestTerm, ()) {
  Cost c = random_cost();
  Estimate e = estimate(c, testing::toy_chip());
  double largest = std::max({e.t_math_s, e.t_memory_s, e.t_comm_s, e.t_launch_s});
  RC_ASSERT(e.t_lower_s == largest);
  switch (e.bound) {
    case Bound::compute: RC_ASSERT(e.t_math_s == largest); break;
    case Bound::memory: RC_ASSERT(e.t_memory_s == largest); break;
    case Bound::comm: RC_ASSERT(e.t_comm_s == largest); break;
    case Bound::launch: RC_ASSERT(e.t_launch_s == largest); break;
  }
}

RC_GTEST_PROP(Roofline, MatmulGrowsWithEveryDimension, ()) {
  // A bigger matmul never takes less time, whichever dimension grows.
  analysis::OpConfig op{.kind = analysis::OpKind::matmul};
  op.m = *rc::gen::inRange(1, 5000);
  op.k = *rc::gen::inRange(1, 5000);
  op.n = *rc::gen::inRange(1, 5000);
  analysis::OpConfig bigger = op;
  const int which = *rc::gen::inRange(0, 3);
  (which == 0 ? bigger.m : which == 1 ? bigger.k : bigger.n) += *rc::gen::inRange(1, 5000);
  auto sys = testing::toy_system();
  Estimate a = estimate(analysis::op_cost(op, sys), sys.chip);
  Estimate b = estimate(analysis::op_cost(bigger, sys), sys.chip);
  RC_ASSERT(b.t_lower_s >= a.t_lower_s);
}

RC_GTEST_PROP(Roofline, SumOfPartsEqualsTotal, ()) {
  // Additivity: the cost of two ops together is the sum of their costs.
  Cost a = random_cost(), b = random_cost();
  Cost s = a + b;
  RC_ASSERT(s.total_flops() == a.total_flops() + b.total_flops());
  RC_ASSERT(s.main_bytes() == a.main_bytes() + b.main_bytes());
  RC_ASSERT(s.launches == a.launches + b.launches);
}

}  // namespace
}  // namespace ridgeline::ops
