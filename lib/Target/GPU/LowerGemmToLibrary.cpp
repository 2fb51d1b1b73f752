//===- LowerGemmToLibrary.cpp - contractions to pd_gpu_gemm_* -------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Replaces f32 / bf16 linalg contractions on (device) memrefs by calls to
// the runtime's strided-batched GEMM (docs/GPU.md):
//
//   void pd_gpu_gemm_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
//                        int32_t transA, int32_t transB, float alpha,
//                        const float *A, int64_t lda, int64_t strideA,
//                        const float *B, int64_t ldb, int64_t strideB,
//                        float beta, float *C, int64_t ldc, int64_t strideC);
//
// The contraction analysis is the CPU target's (GemmPlan.h). Of the loops
// the plan leaves around the GEMM, the innermost becomes the batch (its
// per-operand strides; 0 broadcasts an operand); any further loops stay on
// the host as scf.for around the call.
//
// With `bf16` (pipedream-compile --target cuda --dtype bf16), f32
// contractions run as pd_gpu_gemm_bf16 (bf16 A/B/C, f32 alpha/beta, f32
// accumulation in cuBLAS): A and B are rounded to bf16 (arith.truncf,
// round-to-nearest-even) into fresh buffers laid out with the operands'
// strides (so the plan's leading dimensions and batch strides still hold),
// the GEMM writes a bf16 product with beta = 0, and a kernel adds it (f32)
// into C (or writes it, for a zero-filled C). Buffers stay f32 everywhere
// else: bf16 is only the GEMMs' operand and product precision.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/GemmPlan.h"
#include "pipedream/Target/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace pipedream::cuda {
#define GEN_PASS_DEF_LOWERGEMMTOLIBRARYPASS
#include "pipedream/Target/GPU/Passes.h.inc"
} // namespace pipedream::cuda

using namespace mlir;
using pipedream::GemmOuterLoop;
using pipedream::GemmPlan;

namespace {

/// Declares `pd_gpu_gemm_f32` / `pd_gpu_gemm_bf16` in `module` if needed.
func::FuncOp getOrInsertGemm(ModuleOp module, Type elementType) {
  StringRef name = elementType.isF32() ? "pd_gpu_gemm_f32" : "pd_gpu_gemm_bf16";
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  MLIRContext *ctx = module.getContext();
  Type i32 = IntegerType::get(ctx, 32);
  Type i64 = IntegerType::get(ctx, 64);
  Type f32 = Float32Type::get(ctx);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  // (batch, m, n, k, transA, transB, alpha, A, lda, strideA, B, ldb,
  //  strideB, beta, C, ldc, strideC)
  SmallVector<Type> inputs = {i64, i64, i64, i64, i32, i32, f32, ptr, i64,
                              i64, ptr, i64, i64, f32, ptr, i64, i64};
  OpBuilder builder(module.getBodyRegion());
  auto func = func::FuncOp::create(builder, module.getLoc(), name,
                                   builder.getFunctionType(inputs, {}));
  func.setPrivate();
  return func;
}

/// A statically strided memref type whose elements all lie at offset >= 0
/// from its base (non-negative static strides), or failure.
FailureOr<SmallVector<int64_t>> staticStrides(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!type.hasStaticShape() ||
      failed(type.getStridesAndOffset(strides, offset)))
    return failure();
  for (int64_t stride : strides)
    if (ShapedType::isDynamic(stride) || stride < 0)
      return failure();
  return strides;
}

/// A new buffer of `elementType` with `like`'s shape and strides (offset 0):
/// the allocation (to free) and the view.
std::pair<Value, Value> allocLike(OpBuilder &builder, Location loc,
                                  MemRefType like, Type elementType) {
  SmallVector<int64_t> strides = *staticStrides(like);
  int64_t extent = 1;
  for (auto [size, stride] : llvm::zip(like.getShape(), strides))
    extent += (size > 0 ? size - 1 : 0) * stride;
  auto flat = MemRefType::get({extent}, elementType);
  Value alloc = memref::AllocOp::create(builder, loc, flat);
  auto viewType = MemRefType::get(
      like.getShape(), elementType,
      StridedLayoutAttr::get(builder.getContext(), 0, strides));
  Value view = memref::ReinterpretCastOp::create(
      builder, loc, viewType, alloc, /*offset=*/0, like.getShape(), strides);
  return {alloc, view};
}

/// An elementwise linalg.generic from `in` to `out` (same shape) whose body
/// is `body(inElement, outElement)`.
void emitElementwise(
    OpBuilder &builder, Location loc, Value in, Value out,
    function_ref<Value(OpBuilder &, Location, Value, Value)> body) {
  unsigned rank = cast<MemRefType>(in.getType()).getRank();
  AffineMap id = builder.getMultiDimIdentityMap(rank);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  linalg::GenericOp::create(
      builder, loc, TypeRange{}, ValueRange{in}, ValueRange{out},
      ArrayRef<AffineMap>{id, id}, iterators,
      [&](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, body(b, l, args[0], args[1]));
      });
}

/// Whether an f32 contraction with `plan` can run as a bf16 GEMM (every
/// operand statically strided, see allocLike).
bool canRunAsBF16(const GemmPlan &plan) {
  for (int i = 0; i < 3; ++i)
    if (failed(staticStrides(cast<MemRefType>(plan.memrefs[i].getType()))))
      return false;
  return true;
}

void emitGemm(linalg::LinalgOp op, GemmPlan plan, func::FuncOp gemm,
              bool asBF16) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Type elementType =
      cast<MemRefType>(plan.memrefs[2].getType()).getElementType();

  Operation *zeroFill = pipedream::findZeroFillOfOutput(op);
  bool zeroInit = zeroFill != nullptr;
  if (zeroFill)
    zeroFill->erase();

  // bf16: A and B rounded into bf16 copies with the same strides, the
  // product into a bf16 buffer shaped like C (beta = 0).
  Value f32C, bf16C;
  SmallVector<Value> temporaries;
  if (asBF16) {
    Type bf16 = builder.getBF16Type();
    for (int i = 0; i < 3; ++i) {
      auto [alloc, view] = allocLike(
          builder, loc, cast<MemRefType>(plan.memrefs[i].getType()), bf16);
      temporaries.push_back(alloc);
      if (i < 2)
        emitElementwise(builder, loc, plan.memrefs[i], view,
                        [&](OpBuilder &b, Location l, Value in, Value) {
                          return arith::TruncFOp::create(b, l, bf16, in);
                        });
      else {
        f32C = plan.memrefs[2];
        bf16C = view;
      }
      plan.memrefs[i] = view;
    }
    elementType = bf16;
  }

  Value bases[3], offsets[3];
  for (int i = 0; i < 3; ++i)
    pipedream::emitBasePointerAndOffset(builder, loc, plan.memrefs[i],
                                        bases[i], offsets[i]);

  auto i64Const = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(builder, loc, v, 64);
  };
  auto i32Const = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(builder, loc, v, 32);
  };

  // The innermost plan loop is the batch, when its C items do not
  // interleave (cuBLAS's strided batch, and the runtime's check, want each
  // C item after the previous one); the others loop on the host.
  ArrayRef<GemmOuterLoop> hostLoops = plan.loops;
  GemmOuterLoop batch{1, {0, 0, 0}};
  if (!hostLoops.empty() &&
      hostLoops.back().stride[2] >= (plan.m - 1) * plan.ldc + plan.n) {
    batch = hostLoops.back();
    hostLoops = hostLoops.drop_back();
  }
  Value pointers[3];
  pipedream::emitGemmItemPointers(builder, loc, bases, offsets, hostLoops,
                                  elementType, pointers);
  Type f32 = builder.getF32Type();
  Value alpha = arith::ConstantFloatOp::create(builder, loc,
                                               cast<FloatType>(f32),
                                               APFloat(1.0f));
  Value beta = arith::ConstantFloatOp::create(
      builder, loc, cast<FloatType>(f32),
      APFloat(zeroInit || asBF16 ? 0.0f : 1.0f));
  func::CallOp::create(
      builder, loc, gemm,
      ValueRange{i64Const(batch.size), i64Const(plan.m), i64Const(plan.n),
                 i64Const(plan.k), i32Const(plan.transA ? 1 : 0),
                 i32Const(plan.transB ? 1 : 0), alpha, pointers[0],
                 i64Const(plan.lda), i64Const(batch.stride[0]), pointers[1],
                 i64Const(plan.ldb), i64Const(batch.stride[1]), beta,
                 pointers[2], i64Const(plan.ldc), i64Const(batch.stride[2])});
  if (asBF16) {
    // After the host loops: C = product (zero-filled C) or C + product, in
    // f32.
    builder.setInsertionPoint(op);
    emitElementwise(builder, loc, bf16C, f32C,
                    [&](OpBuilder &b, Location l, Value in, Value out) {
                      Value wide = arith::ExtFOp::create(b, l, f32, in);
                      if (zeroInit)
                        return wide;
                      return arith::AddFOp::create(b, l, out, wide)
                          .getResult();
                    });
    for (Value alloc : temporaries)
      memref::DeallocOp::create(builder, loc, alloc);
  }
  op->erase();
}

struct LowerGemmToLibraryPass
    : pipedream::cuda::impl::LowerGemmToLibraryPassBase<
          LowerGemmToLibraryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<linalg::LinalgOp, GemmPlan>> work;
    module.walk([&](linalg::LinalgOp op) {
      FailureOr<GemmPlan> plan = pipedream::planGemm(
          op, [](Type type) { return isa<Float32Type, BFloat16Type>(type); });
      if (succeeded(plan))
        work.emplace_back(op, std::move(*plan));
    });
    for (auto &[op, plan] : work) {
      Type elementType =
          cast<MemRefType>(plan.memrefs[2].getType()).getElementType();
      bool asBF16 = bf16 && elementType.isF32() && canRunAsBF16(plan);
      if (asBF16)
        elementType = BFloat16Type::get(module.getContext());
      emitGemm(op, plan, getOrInsertGemm(module, elementType), asBF16);
    }
  }
};

} // namespace
