//===- InterchangeParallelLoops.cpp - parallel loops outermost ------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Reorders the loops of linalg ops on tensors so that every parallel loop
// comes before every reduction loop. cuda-map-to-kernels maps the leading
// parallel loops of an op to GPU threads; a reduction loop before a parallel
// one (a column sum: the bias gradient over the batch) would otherwise leave
// the parallel loop inside a sequential one.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/GemmPlan.h"
#include "pipedream/Target/GPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace pipedream::cuda {
#define GEN_PASS_DEF_INTERCHANGEPARALLELLOOPSPASS
#include "pipedream/Target/GPU/Passes.h.inc"
} // namespace pipedream::cuda

using namespace mlir;

namespace {

/// The loop order with parallel loops first, each group in its original
/// order, or an empty vector when the order is already right.
SmallVector<unsigned> parallelFirstOrder(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<unsigned> order;
  for (auto [i, kind] : llvm::enumerate(iterators))
    if (kind == utils::IteratorType::parallel)
      order.push_back(i);
  for (auto [i, kind] : llvm::enumerate(iterators))
    if (kind != utils::IteratorType::parallel)
      order.push_back(i);
  for (auto [position, loop] : llvm::enumerate(order))
    if (position != loop)
      return order;
  return {};
}

struct InterchangeParallelLoopsPass
    : pipedream::cuda::impl::InterchangeParallelLoopsPassBase<
          InterchangeParallelLoopsPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> work;
    getOperation().walk([&](linalg::LinalgOp op) {
      // Contractions go to the GEMM library whatever their loop order
      // (the ones planGemm takes: exactly out + a * b).
      if (!op.hasPureTensorSemantics() || pipedream::isMulAddContraction(op) ||
          isa<linalg::ConvolutionOpInterface>(op.getOperation()))
        return;
      if (!parallelFirstOrder(op).empty())
        work.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : work) {
      rewriter.setInsertionPoint(op);
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        FailureOr<linalg::GenericOp> generalized =
            linalg::generalizeNamedOp(rewriter, op);
        if (failed(generalized))
          continue; // stays as it is: correct, only slower
        generic = *generalized;
      }
      SmallVector<unsigned> order = parallelFirstOrder(generic);
      // Not an error when it fails: the op keeps its loop order.
      (void)linalg::interchangeGenericOp(rewriter, generic, order);
    }
  }
};

} // namespace
