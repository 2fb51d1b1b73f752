//===- LowerGemmToBLAS.cpp - linalg contractions to cblas_?gemm -----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Replaces f32/f64 linalg contractions on memrefs by CBLAS gemm calls, or
// f32 ones by calls to pipedream's own kernel `pd_cpu_sgemm` (same
// arguments; lib/Target/CPU/Kernels/Gemm.cpp) with `sgemm=pd_cpu_sgemm`,
// or to its bf16 GEMM `pd_cpu_gemm_bf16` (`--dtype bf16`: bf16 operands and
// product, f32 accumulation and C) with `sgemm=pd_cpu_gemm_bf16`.
//
// In the default GEMM lowering (`--gemm=auto`) every f32 contraction goes
// to pd_cpu_sgemm and f64 ones to OpenBLAS; `--gemm=kernel` leaves f64 to
// loops; with `--gemm=blas` every contraction goes to OpenBLAS.
// Measurements behind that choice: lib/Target/CPU/README.md.
//
// The contraction analysis (GemmPlan.h, shared with the CUDA target's
// cuda-lower-gemm-to-library) describes each contraction by the loop
// dimensions of its four roles (batch, M, N, K;
// `linalg::inferContractionDims`) and, per operand, the stride of every loop
// dimension in elements (0 where the operand does not use the dimension).
// Dimensions of one role merge into one GEMM dimension when both operands
// that use them lay them out contiguously; M and N dimensions that do not
// merge, and batch dimensions, become `scf.for` loops around the call. K
// dimensions must merge (a loop over K would need to switch beta from 0 to 1
// across iterations; no model needs it).
//
// Epilogues (pipedream's kernels only): a Linear layer's bias broadcast
// into C right before the contraction becomes the `bias` argument of
// `pd_cpu_sgemm_epilogue` (beta = 0), and a ReLU that is the only reader of
// a result so initialized (zero or bias) becomes its `activation`, the
// GEMM writing the ReLU's buffer. The kernel applies both to each register
// tile while it is in cache: no pass over C to broadcast the bias, none
// for the ReLU, and no intermediate buffer.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/GemmPlan.h"
#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>
#include <numeric>

namespace pipedream::cpu {
#define GEN_PASS_DEF_LOWERGEMMTOBLASPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

/// CBLAS enum values (cblas.h).
constexpr int32_t kCblasRowMajor = 101;
constexpr int32_t kCblasNoTrans = 111;
constexpr int32_t kCblasTrans = 112;

/// Kernels.h's PD_CPU_ACT_* (the epilogue's activation argument).
constexpr int32_t kActNone = 0, kActRelu = 1, kActReluNum = 2;

/// Declares `name` (cblas_sgemm, cblas_dgemm or pd_cpu_sgemm: CBLAS's
/// arguments; with `epilogue`, pd_cpu_sgemm_epilogue's two more: bias
/// pointer and activation) in `module` if needed.
func::FuncOp getOrInsertGemm(ModuleOp module, FloatType elementType,
                             StringRef name, bool epilogue = false) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  MLIRContext *ctx = module.getContext();
  Type i32 = IntegerType::get(ctx, 32);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  // (order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
  SmallVector<Type> inputs = {i32, i32, i32, i32, i32, i32, elementType,
                              ptr, i32, ptr, i32, elementType, ptr, i32};
  if (epilogue)
    inputs.append({ptr, i32});
  OpBuilder builder(module.getBodyRegion());
  auto func = func::FuncOp::create(builder, module.getLoc(), name,
                                   builder.getFunctionType(inputs, {}));
  func.setPrivate();
  return func;
}

/// Whether `memref` is a statically shaped memref whose last dimension has
/// unit stride; `lastSize` is that dimension's size.
bool hasUnitInnerStride(Value memref, int64_t &lastSize) {
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (!type || !type.hasStaticShape() || type.getRank() == 0)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.back() != 1)
    return false;
  lastSize = type.getShape().back();
  return true;
}

/// The `linalg.generic` that broadcasts a rank-1 `bias` along the last
/// dimension of `op`'s output right before `op` (only memory-effect-free
/// ops in between), when the GEMM of `plan` can take it as the epilogue's
/// per-column bias: every element the calls write at column j of their
/// row-major C is then at index j of the output's last dimension (that
/// dimension is the GEMM's N, contiguous, and rows and loop steps move by
/// whole multiples of it). Null otherwise.
linalg::GenericOp findBiasFillOfOutput(linalg::LinalgOp op,
                                       const pipedream::GemmPlan &plan) {
  Value output = op.getDpsInitOperand(0)->get();
  Operation *previous = op->getPrevNode();
  while (previous && !isa<linalg::LinalgOp>(previous) &&
         isMemoryEffectFree(previous))
    previous = previous->getPrevNode();
  auto fill = dyn_cast_or_null<linalg::GenericOp>(previous);
  if (!fill || fill.getNumDpsInputs() != 1 || fill.getNumDpsInits() != 1 ||
      fill.getDpsInitOperand(0)->get() != output ||
      fill.getNumParallelLoops() != fill.getNumLoops())
    return nullptr;
  // The body is `yield %in`.
  Block &body = fill.getRegion().front();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (body.getOperations().size() != 1 || !yield ||
      yield.getNumOperands() != 1 || yield.getOperand(0) != body.getArgument(0))
    return nullptr;
  Value bias = fill.getDpsInputOperand(0)->get();
  int64_t biasSize, cLast;
  if (!hasUnitInnerStride(bias, biasSize) ||
      cast<MemRefType>(bias.getType()).getRank() != 1 ||
      !hasUnitInnerStride(output, cLast) || biasSize != cLast)
    return nullptr;
  AffineMap outMap = fill.getIndexingMapsArray()[1];
  AffineMap inMap = fill.getIndexingMapsArray()[0];
  unsigned rank = outMap.getNumDims();
  if (!outMap.isIdentity() || inMap.getNumResults() != 1 ||
      inMap.getResult(0) != getAffineDimExpr(rank - 1, op.getContext()))
    return nullptr;
  if (plan.n != cLast || plan.ldc % cLast != 0)
    return nullptr;
  for (const pipedream::GemmOuterLoop &loop : plan.loops)
    if (loop.stride[2] % cLast != 0)
      return nullptr;
  return fill;
}

/// The activation (kActRelu or kActReluNum) of `relu`: a `linalg.generic`
/// with identity maps whose body is max(in, +0.0) (arith.maximumf or
/// arith.maxnumf, either operand order); kActNone for anything else.
int32_t reluKind(linalg::GenericOp relu) {
  Block &body = relu.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  // The max, the yield and constants (the zero may be defined in the body).
  for (Operation &inner : body.without_terminator())
    if (!isa<arith::ConstantOp>(inner) && &inner != yield->getPrevNode())
      return kActNone;
  Operation *max = yield.getNumOperands() == 1
                       ? yield.getOperand(0).getDefiningOp()
                       : nullptr;
  if (!max || !isa<arith::MaximumFOp, arith::MaxNumFOp>(max))
    return kActNone;
  Value in = body.getArgument(0);
  Value lhs = max->getOperand(0), rhs = max->getOperand(1);
  Value other = lhs == in ? rhs : rhs == in ? lhs : Value();
  if (!other || !matchPattern(other, m_PosZeroFloat()))
    return kActNone;
  return isa<arith::MaximumFOp>(max) ? kActRelu : kActReluNum;
}

/// For an `op` whose output starts as zero or a bias (erased with the
/// contraction): the ReLU that is the only reader of that output, a
/// `memref.alloc` used by nothing else but deallocations, when the GEMM
/// may write the ReLU's own buffer instead. That buffer, of the same type,
/// is a `memref.alloc` of the same block that nothing uses between `op` and
/// the ReLU (writing it earlier changes nothing then); it is moved before
/// `op` where it was allocated after it. Returns the ReLU and its
/// activation, or null.
linalg::GenericOp findReluOfOutput(linalg::LinalgOp op, Operation *init,
                                   int32_t &act) {
  Value output = op.getDpsInitOperand(0)->get();
  auto alloc = output.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != op->getBlock())
    return nullptr;
  linalg::GenericOp relu;
  for (Operation *user : output.getUsers()) {
    if (user == op.getOperation() || user == init ||
        isa<memref::DeallocOp>(user))
      continue;
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (relu || !generic)
      return nullptr;
    relu = generic;
  }
  if (!relu || relu->getBlock() != op->getBlock() ||
      !op->isBeforeInBlock(relu) || relu.getNumDpsInputs() != 1 ||
      relu.getNumDpsInits() != 1 ||
      relu.getDpsInputOperand(0)->get() != output ||
      relu.getNumParallelLoops() != relu.getNumLoops() ||
      !llvm::all_of(relu.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return nullptr;
  act = reluKind(relu);
  Value target = relu.getDpsInitOperand(0)->get();
  auto targetAlloc = target.getDefiningOp<memref::AllocOp>();
  if (act == kActNone || target.getType() != output.getType() || !targetAlloc ||
      targetAlloc->getBlock() != op->getBlock() ||
      !targetAlloc.getDynamicSizes().empty() ||
      !targetAlloc.getSymbolOperands().empty() ||
      !targetAlloc->isBeforeInBlock(relu))
    return nullptr;
  for (Operation *user : target.getUsers()) {
    if (user == relu.getOperation())
      continue;
    Operation *ancestor = op->getBlock()->findAncestorOpInBlock(*user);
    if (!ancestor || !relu->isBeforeInBlock(ancestor))
      return nullptr;
  }
  if (op->isBeforeInBlock(targetAlloc))
    targetAlloc->moveBefore(op);
  return relu;
}

/// Emits the loops and calls for `plan` in place of `op`; with `epilogue`
/// (the name of pd_cpu_sgemm_epilogue or pd_cpu_gemm_bf16_epilogue in
/// `module`, or empty), fuses a bias broadcast before `op` and a ReLU after
/// it into the call.
void emitGemm(ModuleOp module, linalg::LinalgOp op, pipedream::GemmPlan plan,
              func::FuncOp gemm, StringRef epilogue) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  auto elementType = cast<FloatType>(
      cast<MemRefType>(plan.memrefs[2].getType()).getElementType());

  // beta = 0 when the output was just zero-filled or given a bias that the
  // kernel adds itself: saves a pass over C.
  Operation *zeroFill = pipedream::findZeroFillOfOutput(op);
  linalg::GenericOp biasFill;
  if (!zeroFill && !epilogue.empty())
    biasFill = findBiasFillOfOutput(op, plan);
  bool zeroInit = zeroFill || biasFill;
  int32_t act = kActNone;
  linalg::GenericOp relu;
  memref::AllocOp unused;
  if (zeroInit && !epilogue.empty()) {
    Operation *init = zeroFill ? zeroFill : biasFill.getOperation();
    relu = findReluOfOutput(op, init, act);
    if (relu) {
      unused = plan.memrefs[2].getDefiningOp<memref::AllocOp>();
      plan.memrefs[2] = relu.getDpsInitOperand(0)->get();
    }
  }
  if (biasFill || relu)
    gemm = getOrInsertGemm(module, elementType, epilogue, /*epilogue=*/true);
  Value biasBase, biasOffset;
  if (biasFill)
    pipedream::emitBasePointerAndOffset(builder, loc,
                                        biasFill.getDpsInputOperand(0)->get(),
                                        biasBase, biasOffset);
  if (zeroFill)
    zeroFill->erase();

  // Base pointers (aligned pointer + the view's offset) and element offsets.
  Value bases[3];
  Value offsets[3];
  for (int i = 0; i < 3; ++i)
    pipedream::emitBasePointerAndOffset(builder, loc, plan.memrefs[i],
                                        bases[i], offsets[i]);

  auto i32Const = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(builder, loc, v, 32);
  };
  Value order = i32Const(kCblasRowMajor);
  Value transA = i32Const(plan.transA ? kCblasTrans : kCblasNoTrans);
  Value transB = i32Const(plan.transB ? kCblasTrans : kCblasNoTrans);
  Value m = i32Const(plan.m), n = i32Const(plan.n), k = i32Const(plan.k);
  Value lda = i32Const(plan.lda), ldb = i32Const(plan.ldb),
        ldc = i32Const(plan.ldc);
  Value alpha = arith::ConstantFloatOp::create(
      builder, loc, elementType, APFloat(elementType.getFloatSemantics(), 1));
  Value beta = arith::ConstantFloatOp::create(
      builder, loc, elementType,
      zeroInit ? APFloat::getZero(elementType.getFloatSemantics())
               : APFloat(elementType.getFloatSemantics(), 1));

  // Loop nest over batch (and unmerged M/N) dimensions.
  Value pointers[3];
  pipedream::emitGemmItemPointers(builder, loc, bases, offsets, plan.loops,
                                  elementType, pointers);
  SmallVector<Value> arguments = {order, transA, transB,      m,   n,
                                  k,     alpha,  pointers[0], lda, pointers[1],
                                  ldb,   beta,   pointers[2], ldc};
  if (biasFill || relu) {
    auto ptrType = LLVM::LLVMPointerType::get(builder.getContext());
    Value bias = biasFill
                     ? LLVM::GEPOp::create(
                           builder, loc, ptrType, elementType, biasBase,
                           ValueRange{arith::IndexCastOp::create(
                               builder, loc, builder.getI64Type(), biasOffset)})
                           .getResult()
                     : LLVM::ZeroOp::create(builder, loc, ptrType).getResult();
    arguments.append({bias, i32Const(act)});
  }
  func::CallOp::create(builder, loc, gemm, arguments);
  op->erase();
  if (biasFill)
    biasFill->erase();
  if (relu)
    relu->erase();
  if (unused) {
    for (Operation *user : llvm::make_early_inc_range(unused->getUsers()))
      user->erase();
    unused->erase();
  }
}

struct LowerGemmToBLASPass
    : pipedream::cpu::impl::LowerGemmToBLASPassBase<LowerGemmToBLASPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (sgemm != "cblas_sgemm" && sgemm != "pd_cpu_sgemm" &&
        sgemm != "pd_cpu_gemm_bf16") {
      module.emitError() << "cpu-lower-gemm-to-blas: sgemm=" << sgemm
                         << ": expected cblas_sgemm, pd_cpu_sgemm or "
                            "pd_cpu_gemm_bf16";
      return signalPassFailure();
    }
    bool f64 = lowerF64;
    SmallVector<std::pair<linalg::LinalgOp, pipedream::GemmPlan>> work;
    module.walk([&](linalg::LinalgOp op) {
      FailureOr<pipedream::GemmPlan> plan =
          pipedream::planGemm(op, [f64](Type type) {
            return isa<Float32Type>(type) || (f64 && isa<Float64Type>(type));
          });
      if (succeeded(plan))
        work.emplace_back(op, std::move(*plan));
    });
    for (auto &[op, plan] : work) {
      auto elementType = cast<FloatType>(
          cast<MemRefType>(plan.memrefs[2].getType()).getElementType());
      func::FuncOp gemm = getOrInsertGemm(
          module, elementType,
          elementType.isF32() ? StringRef(sgemm) : StringRef("cblas_dgemm"));
      // Pipedream's kernels take an epilogue (bias, ReLU); CBLAS does not.
      StringRef epilogue;
      if (elementType.isF32() && sgemm == "pd_cpu_sgemm")
        epilogue = "pd_cpu_sgemm_epilogue";
      else if (elementType.isF32() && sgemm == "pd_cpu_gemm_bf16")
        epilogue = "pd_cpu_gemm_bf16_epilogue";
      emitGemm(module, op, plan, gemm, epilogue);
    }
  }
};

} // namespace
