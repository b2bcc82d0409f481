// Golden structure of the roofline SVG: ceilings, roofs, ridge and points at the pixel
// coordinates derived by hand from the axis rules, escaping, and bad points.
#include "ridgeline/report/svg.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <vector>
#include <string>

#include "toy_chip.hpp"

namespace ridgeline::report {
namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// The boxes of the <text class="CLASS" x=".." y=".." ...>TEXT</text> elements of `svg`, as the
// placement measures them: `px_per_char` per character, from 11 px above the baseline to 2
// below, left of x when anchored at the end.
std::vector<std::array<double, 4>> text_boxes(const std::string& svg, const std::string& cls, double px_per_char) {
  std::vector<std::array<double, 4>> out;
  const std::string open = "<text class=\"" + cls + "\" x=\"";
  for (std::size_t at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const std::size_t tag_end = svg.find('>', at);
    const std::string tag = svg.substr(at, tag_end - at);
    const double x = std::stod(tag.substr(open.size()));
    const double y = std::stod(tag.substr(tag.find("y=\"") + 3));
    const bool end = tag.find("text-anchor=\"end\"") != std::string::npos;
    const double w = px_per_char * static_cast<double>(svg.find("</text>", tag_end) - tag_end - 1);
    out.push_back(end ? std::array<double, 4>{x - w, y - 11, x, y + 2} : std::array<double, 4>{x, y - 11, x + w, y + 2});
  }
  return out;
}

bool overlap(const std::array<double, 4>& a, const std::array<double, 4>& b) {
  return a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
}

// The toy chip: bf16 matrix peak 1e14 FLOP/s, fp32 vector 1e13, HBM 1e12 B/s: ridge 100.
// Axes (log-log): intensity from 1e-2 to max(1e3, 10 x ridge) = 1e3, five decades over
// pixels 110..720; rate from HBM x 1e-2 = 1e10 to 2 x peak = 2e14 rounded up to 1e15, five
// decades over pixels 530..50. So x(I) = 110 + (log10 I + 2) / 5 x 610 and
// y(F) = 530 - (log10 F - 10) / 5 x 480.
TEST(Svg, RooflineGeometryByHand) {
  const hw::ChipSpec chip = testing::toy_chip();
  // On the HBM roof at I = 1: 1e12 FLOP/s -> x = 110 + 2/5 x 610 = 354, y = 530 - 2/5 x 480 = 338.
  const std::string svg = roofline_svg({chip}, DType::bf16, {{"on the roof", 1, 1e12}}, "t");
  // Ridge at (100, 1e14): x = 110 + 4/5 x 610 = 598, y = 530 - 4/5 x 480 = 146.
  EXPECT_NE(svg.find("<circle class=\"ridge\" cx=\"598.0\" cy=\"146.0\""), std::string::npos) << svg;
  // The HBM roof from (1e-2, 1e10) = (110, 530) to the ridge.
  EXPECT_NE(svg.find("<line class=\"roof\" x1=\"110.0\" y1=\"530.0\" x2=\"598.0\" y2=\"146.0\""), std::string::npos);
  // The matrix ceiling from the ridge to the right edge (1e3 -> 720) at y = 146.
  EXPECT_NE(svg.find("<line class=\"ceiling\" x1=\"598.0\" y1=\"146.0\" x2=\"720.0\" y2=\"146.0\""), std::string::npos);
  // The fp32 vector ceiling 1e13 from its own ridge at I = 10 (x = 476) at y = 530 - 3/5 x 480 = 242.
  EXPECT_NE(svg.find("<line class=\"vector\" x1=\"476.0\" y1=\"242.0\" x2=\"720.0\" y2=\"242.0\""), std::string::npos);
  EXPECT_NE(svg.find("<circle class=\"point\" cx=\"354.0\" cy=\"338.0\""), std::string::npos);
  // Axis labels: decades 1e-2 .. 1e3 on x.
  EXPECT_NE(svg.find(">10 m<"), std::string::npos);
  EXPECT_NE(svg.find(">1 k<"), std::string::npos);
  EXPECT_NE(svg.find("arithmetic intensity (FLOPs/byte)"), std::string::npos);
}

TEST(Svg, MarkupIsEscapedAndBadPointsAreLeftOut) {
  const hw::ChipSpec chip = testing::toy_chip();
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::string svg = roofline_svg({chip}, DType::bf16,
                                       {{"<b>&\"x\"", 1, 1e12}, {"nan", nan, 1e12}, {"inf", inf, 1e12}, {"zero", 0, 1e12},
                                        {"no rate", 1, 0}, {"inf rate", 1, inf}},
                                       "a <title> & more");
  EXPECT_EQ(count(svg, "class=\"point\""), 1u);
  EXPECT_NE(svg.find("&lt;b&gt;&amp;&quot;x&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_NE(svg.find("a &lt;title&gt; &amp; more"), std::string::npos);
  // The axes are those of the chip alone: no NaN or infinite coordinate anywhere.
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("\"inf"), std::string::npos);
  EXPECT_EQ(svg.find("\"-inf"), std::string::npos);
  EXPECT_NE(svg.find("<circle class=\"ridge\" cx=\"598.0\" cy=\"146.0\""), std::string::npos);
}

// Point labels cross no other text (each other, the ridge label) and stay inside the plot,
// else the point is numbered and keyed under the legend; the dotted vector ceiling has its
// legend entry. Boxes as the placement measures text: 6 px per character, 13 px high.
TEST(Svg, LabelsDoNotOverlap) {
  const hw::ChipSpec chip = testing::toy_chip();
  std::vector<ChartPoint> pts;
  for (int i = 0; i < 40; ++i) pts.push_back({"a fairly long op name " + std::to_string(i), 1 + 0.01 * i, 1e12 * (1 + 0.01 * i)});
  pts.push_back({"right at the edge of the plot", 900, 1e14});
  const std::string svg = roofline_svg({chip}, DType::bf16, pts, "crowded");
  auto boxes = text_boxes(svg, "point-label", 6);
  ASSERT_GT(boxes.size(), 10u);
  // The ridge label "ridge 100" at (604, 162).
  boxes.push_back({604, 151, 604 + 6 * 9, 164});
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    EXPECT_GE(boxes[i][0], 110);
    EXPECT_LE(boxes[i][2], 720);  // not cut at the plot's right edge
    for (std::size_t j = i + 1; j < boxes.size(); ++j) EXPECT_FALSE(overlap(boxes[i], boxes[j])) << i << " and " << j;
  }
  // Every point is labelled, or numbered with its line in the key, or counted in "N more".
  const std::size_t more = svg.find("class=\"key-more\"") == std::string::npos ? 0 : std::stoul(svg.substr(svg.find('>', svg.find("class=\"key-more\"")) + 1));
  EXPECT_EQ(count(svg, "class=\"point-label\"") + count(svg, "class=\"key\"") + more, pts.size());
  EXPECT_EQ(count(svg, "class=\"point-number\""), count(svg, "class=\"key\""));
  EXPECT_NE(svg.find("vector fp32 10 TFLOP/s"), std::string::npos);
}

// A crowded roofline: a number is drawn beside a point only with its line in the key; once
// the key is full, the rest are named on hover and counted in one line ("N more"). A point's
// tag, when it has one, is what is drawn (the label stays its hover title), not cut under 40
// characters.
TEST(Svg, NoNumberWithoutItsKeyLine) {
  const hw::ChipSpec chip = testing::toy_chip();
  std::vector<ChartPoint> pts;
  for (int i = 0; i < 200; ++i) {
    pts.push_back({"phase: op " + std::to_string(i) + " (dense layers, x32)", 1 + 0.001 * i, 1e12 * (1 + 0.001 * i), "op " + std::to_string(i)});
  }
  const std::string svg = roofline_svg({chip}, DType::bf16, pts, "crowded");
  EXPECT_EQ(count(svg, "class=\"point-number\""), count(svg, "class=\"key\""));
  const std::size_t labelled = count(svg, "class=\"point-label\""), keyed = count(svg, "class=\"key\"");
  ASSERT_EQ(count(svg, "class=\"key-more\""), 1u);
  EXPECT_NE(svg.find(fmt::format(">{} more: hover for names<", pts.size() - labelled - keyed)), std::string::npos);
  EXPECT_EQ(svg.find("(dense layers, x32)</text>"), std::string::npos);  // hover titles only
  EXPECT_NE(svg.find(">op 0</text>"), std::string::npos);
}

// A sweep's tags (configurations beside markers) likewise: a tag is drawn only where it
// crosses no other tag (5.5 px per character at 10 px), the rest stay on hover.
TEST(Svg, SweepTagsDoNotOverlap) {
  Series front{"front", {}, {}, true, true, {}, {}};
  for (int i = 0; i < 60; ++i) {
    front.x.push_back(50 + i);
    front.y.push_back(600 - 5 * i);
    front.labels.push_back("plan " + std::to_string(i));
    front.tags.push_back("tp8 b" + std::to_string(i) + " fp8_e4m3");
  }
  const std::string svg = sweep_svg({front}, "per user", "per chip", "tags", false, false);
  const auto boxes = text_boxes(svg, "tag", 5.5);
  EXPECT_GT(boxes.size(), 15u);
  EXPECT_LT(boxes.size(), 60u);  // not all fit: those are on hover
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    for (std::size_t j = i + 1; j < boxes.size(); ++j) EXPECT_FALSE(overlap(boxes[i], boxes[j])) << i << " and " << j;
  }
}

TEST(Svg, ManyPointsStayWellFormed) {
  const hw::ChipSpec chip = testing::toy_chip();
  std::vector<ChartPoint> pts;
  for (int i = 0; i < 5000; ++i) pts.push_back({"op" + std::to_string(i), std::pow(10.0, -1 + 4.0 * i / 5000), 1e11 + 1e9 * i});
  const std::string svg = roofline_svg({chip}, DType::bf16, pts, "many");
  EXPECT_EQ(count(svg, "class=\"point\""), 5000u);
  EXPECT_EQ(count(svg, "<svg"), 1u);
  EXPECT_EQ(count(svg, "</svg>"), 1u);
}

}  // namespace
}  // namespace ridgeline::report
