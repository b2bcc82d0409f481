// The evaluation path's lines and envelopes (ridgeline/analysis/op_lines.hpp), by hand.
#include "ridgeline/analysis/op_lines.hpp"

#include <gtest/gtest.h>

namespace ridgeline::analysis {
namespace {

OpLine line(double a, double b, double rep = 1) {
  OpLine l;
  l.a = {a, 0, 0, 0, 0};
  l.b = {b, 0, 0, 0, 0};
  l.rep = rep;
  return l;
}

TEST(OpLines, EnvelopeSumsMaxima) {
  // Two ops: max(1 + x, 3) and 2x, repeated twice: 2·(max(1 + x, 3) + 2x).
  OpLine a = line(1, 1, 2);
  a.a[1] = 3;
  const OpLine lines[2] = {a, line(0, 2, 2)};
  Envelope env;
  build_envelope(lines, 2, 0, env);
  EXPECT_DOUBLE_EQ(env.at(1), 2 * (3 + 2));  // 1 + 1 < 3
  EXPECT_DOUBLE_EQ(env.at(5), 2 * (6 + 10));
}

TEST(OpLines, SwitchLineTakesTheOptionItsTimeChooses) {
  // A collective with two options: a low-latency one, time 1 + 2x, and a bandwidth one,
  // time 3 + x; they cross at x = 2. Their realistic parts are 2 + 2x and 4 + x (other
  // fixed costs added), one op repeated 3 times, beside an op of realistic time 10.
  SwitchLine w;
  w.count = 2;
  w.rep = 3;
  w.t0 = {1, 3};
  w.t1 = {2, 1};
  w.lines[0] = line(2, 2, 3);
  w.lines[1] = line(4, 1, 3);
  // A third option that never wins (slower at every x).
  w.count = 3;
  w.t0[2] = 5, w.t1[2] = 1.5;
  w.lines[2] = line(100, 0, 3);
  const OpLine fixed = line(10, 0);
  Envelope env;
  build_envelope(&fixed, 1, 0, env, &w, 1);
  EXPECT_DOUBLE_EQ(env.at(1), 10 + 3 * (2 + 2));    // the first option: 1 + 2 = 3 < 3 + 1
  EXPECT_DOUBLE_EQ(env.at(1.5), 10 + 3 * (2 + 3));  // still the first: 4 < 4.5
  EXPECT_DOUBLE_EQ(env.at(3), 10 + 3 * (4 + 3));    // the second: 6 < 7
  EXPECT_DOUBLE_EQ(env.at(100), 10 + 3 * (4 + 100));
  // Where the chosen option changes, the realistic time jumps (6 → 6.5 at x = 2+).
  EXPECT_DOUBLE_EQ(realistic_at(w, 1.5), 5);
  EXPECT_DOUBLE_EQ(realistic_at(w, 3), 7);
  // The envelope from a start past the crossing begins on the second option.
  build_envelope(&fixed, 1, 2.5, env, &w, 1);
  EXPECT_DOUBLE_EQ(env.at(2.5), 10 + 3 * 6.5);
}

}  // namespace
}  // namespace ridgeline::analysis
