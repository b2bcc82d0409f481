// A kernel class's figures in words (report::class_figures): the one spelling `hw show`'s class
// list and every curve fit print, with what a class lacks named as the figure it falls back to.
#include <gtest/gtest.h>

#include "ridgeline/report/curves.hpp"

namespace ridgeline::report {
namespace {

using hw::KernelClass;

hw::ClassEfficiency& at(hw::EfficiencySpec& e, KernelClass k) { return e.kernel[static_cast<int>(k)]; }

TEST(ClassFigures, ALentFigureIsNamedAsItsLendersAndAFitTakesTheFilesOwnWhereItHasNone) {
  // Triton's fused MoE over block-scaled experts (gemm_expert_scaled) falls back to the fused
  // MoE's figures (gemm_expert): the file gives it a matrix fraction and a tile fill of its own,
  // and its sibling a memory fraction and a fixed time.
  hw::EfficiencySpec file;
  at(file, KernelClass::gemm_expert) = {.matrix = 0.4757, .memory = 0.883, .overhead_s = 12.88e-6};
  hw::ClassEfficiency& own = at(file, KernelClass::gemm_expert_scaled);
  own.matrix = 0.1858;
  own.fill_k = 166;
  // The file's own class: its matrix fraction to three places, the sibling's memory and fixed
  // time named as the sibling's, the fill (on the expert weights' loads for this class), the
  // fixed time last.
  EXPECT_EQ(class_figures(own, KernelClass::gemm_expert_scaled, file),
            "matrix 0.186, gemm_expert's memory 0.883, each tile 166 columns of K more on its loads, gemm_expert's 12.88 us per kernel");
  // A fit that gives a memory fraction equal to the sibling's, and a fixed time of its own:
  // the fraction is still the sibling's (the file gives the class none), the time the fit's.
  hw::ClassEfficiency fit = own;
  fit.memory = 0.883;
  fit.overhead_s = 13.31e-6;
  EXPECT_EQ(class_figures(fit, KernelClass::gemm_expert_scaled, file),
            "matrix 0.186, gemm_expert's memory 0.883, each tile 166 columns of K more on its loads, 13.31 us per kernel");
  // The file gives the class a fixed time of its own (13.31 us) and the fit none: the file's, as
  // the fit applies it, under no other class's name.
  own.overhead_s = 13.31e-6;
  hw::ClassEfficiency lacking = own;
  lacking.overhead_s = 0;
  EXPECT_EQ(class_figures(lacking, KernelClass::gemm_expert_scaled, file),
            "matrix 0.186, gemm_expert's memory 0.883, each tile 166 columns of K more on its loads, 13.31 us per kernel");
  // The gemm class: a share of the measured matmul rate and an overlap share with its partner.
  hw::ClassEfficiency& gemm = at(file, KernelClass::gemm);
  gemm = {.memory = 0.9104, .overhead_s = 4.549e-6, .overlap = 0.66, .matmul = 0.91};
  EXPECT_EQ(class_figures(gemm, KernelClass::gemm, file),
            "memory 0.910, 0.910 of the measured matmul rate, at least 0.660 of matrix + memory, 4.549 us per kernel");
}

}  // namespace
}  // namespace ridgeline::report
