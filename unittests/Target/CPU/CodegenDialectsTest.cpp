//===- CodegenDialectsTest.cpp - the CPU codegen's dialect registry -------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// registerCPUCodegenDialects is the only registry pipedream-compile and the
// Python module lower with (pipedream-opt registers every upstream
// extension, so lit tests through it cannot see a missing one). Upstream
// patterns that need an external interface model fail without a word when
// it is missing: the fold of a reshaped tensor.empty needs
// tensor.expand_shape's ReifyRankedShapedTypeOpInterface. Without it,
// attention's batched contractions (B * H split into B and H by
// cpu-fold-transposes-into-contractions) kept an expand_shape of their
// zero-filled output, and bufferization then filled one buffer, copied it
// into another and ran the GEMM with beta = 1 on the copy.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/CPUCodegen.h"
#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

// A zero-filled [8, 4, 128, 128] accumulator made as an expansion of a new
// [32, 128, 128] tensor, as the transpose folding leaves attention's scores.
constexpr const char *kExpandedFill = R"mlir(
func.func @f() -> tensor<8x4x128x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x128x128xf32>
  %x = tensor.expand_shape %e [[0, 1], [2], [3]] output_shape [8, 4, 128, 128]
      : tensor<32x128x128xf32> into tensor<8x4x128x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%x : tensor<8x4x128x128xf32>)
      -> tensor<8x4x128x128xf32>
  return %f : tensor<8x4x128x128xf32>
}
)mlir";

struct CodegenDialects : ::testing::Test {
  CodegenDialects() {
    DialectRegistry registry;
    pipedream::cpu::registerCPUCodegenDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
  MLIRContext context;
};

TEST_F(CodegenDialects, ReshapesReifyTheirShapes) {
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kExpandedFill, &context);
  ASSERT_TRUE(module);
  int reshapes = 0;
  module->walk([&](tensor::ExpandShapeOp op) {
    ++reshapes;
    EXPECT_TRUE(isa<ReifyRankedShapedTypeOpInterface>(op.getOperation()));
  });
  EXPECT_EQ(reshapes, 1);
}

TEST_F(CodegenDialects, ExpandedEmptyFoldsInTheTransposeFolding) {
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kExpandedFill, &context);
  ASSERT_TRUE(module);
  PassManager pm(&context);
  pm.addNestedPass<func::FuncOp>(
      pipedream::cpu::createFoldTransposesIntoContractionsPass());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  int reshapes = 0;
  module->walk([&](tensor::ExpandShapeOp) { ++reshapes; });
  EXPECT_EQ(reshapes, 0);
  // The fill writes a new tensor of the expanded shape itself.
  linalg::FillOp fill;
  module->walk([&](linalg::FillOp op) { fill = op; });
  ASSERT_TRUE(fill);
  auto empty = fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty.getType().getShape(), ArrayRef<int64_t>({8, 4, 128, 128}));
}

} // namespace
