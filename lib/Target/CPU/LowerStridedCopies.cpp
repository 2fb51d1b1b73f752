//===- LowerStridedCopies.cpp - memref.copy that memcpy cannot do ---------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// `memref.copy` between memrefs that are not both contiguous lowers to a call
// of `memrefCopy` from MLIR's C runner utilities, which bundles do not link.
// Such copies become `linalg.copy`, expanded into loops in place.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/Builders.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_LOWERSTRIDEDCOPIESPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

/// True when the LLVM lowering turns a copy touching `type` into a memcpy.
bool isMemcpyable(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && memref::isStaticShapeAndContiguousRowMajor(memref);
}

struct LowerStridedCopiesPass
    : pipedream::cpu::impl::LowerStridedCopiesPassBase<
          LowerStridedCopiesPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      if (!isMemcpyable(copy.getSource().getType()) ||
          !isMemcpyable(copy.getTarget().getType()))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      OpBuilder builder(copy);
      linalg::CopyOp::create(builder, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    }
  }
};

} // namespace
