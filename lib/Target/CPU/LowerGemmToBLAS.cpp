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
// `pd_cpu_sgemm_epilogue` (beta = 0); a loop that is the only reader of a
// result so initialized (zero or bias), directly or through one reshape,
// and applies a ReLU and/or (after a zero fill) adds a bias and a residual
// becomes its `activation`, `bias` and `addend`, the GEMM writing the
// loop's buffer. The kernel
// applies both to each register tile while it is in cache: no pass over C
// for the bias or the ReLU, and no intermediate buffer.
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
/// arguments; with `epilogue`, pd_cpu_sgemm_epilogue's four more: bias,
/// addend and its leading dimension, activation) in `module` if needed.
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
    inputs.append({ptr, ptr, i32, i32});
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

/// Whether a rank-1 `bias` with unit stride, indexed by `map` (a map onto
/// the last of its loop dimensions) over an output `view` whose last
/// dimension is that of the GEMM's C (`cLast`), is the epilogue's
/// per-column bias of the calls `plan` makes: every element they write at
/// column j of their row-major C is then at index j of that dimension
/// (the GEMM's N, contiguous; rows and loop steps move by whole multiples
/// of it).
bool isColumnBias(Value bias, AffineMap map, Value view, int64_t cLast,
                  const pipedream::GemmPlan &plan) {
  int64_t biasSize, viewLast;
  if (!hasUnitInnerStride(bias, biasSize) ||
      cast<MemRefType>(bias.getType()).getRank() != 1 ||
      !hasUnitInnerStride(view, viewLast) || biasSize != viewLast ||
      viewLast != cLast)
    return false;
  unsigned rank = map.getNumDims();
  if (map.getNumResults() != 1 ||
      map.getResult(0) != getAffineDimExpr(rank - 1, map.getContext()))
    return false;
  if (plan.n != cLast || plan.ldc % cLast != 0)
    return false;
  return llvm::all_of(plan.loops, [&](const pipedream::GemmOuterLoop &loop) {
    return loop.stride[2] % cLast == 0;
  });
}

/// The `linalg.generic` that broadcasts a rank-1 bias along the last
/// dimension of `op`'s output right before `op` (only memory-effect-free
/// ops in between), when the GEMM of `plan` can take it as the epilogue's
/// bias (isColumnBias). Null otherwise.
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
      fill.getNumParallelLoops() != fill.getNumLoops() ||
      !fill.getIndexingMapsArray()[1].isIdentity())
    return nullptr;
  // The body is `yield %in`.
  Block &body = fill.getRegion().front();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (body.getOperations().size() != 1 || !yield ||
      yield.getNumOperands() != 1 || yield.getOperand(0) != body.getArgument(0))
    return nullptr;
  int64_t cLast;
  if (!hasUnitInnerStride(output, cLast) ||
      !isColumnBias(fill.getDpsInputOperand(0)->get(),
                    fill.getIndexingMapsArray()[0], output, cLast, plan))
    return nullptr;
  return fill;
}

/// What a generic after the GEMM applies to its result, as an epilogue.
struct Consumer {
  linalg::GenericOp generic;
  /// The reshape between the GEMM's output and `generic`, or null.
  Operation *view = nullptr;
  /// A bias the generic adds (or null), a residual it adds after the bias
  /// (or null: a memref of the generic's shape, laid out as its output),
  /// and the activation after them.
  Value bias, residual;
  int32_t act = kActNone;
};

/// Whether `value` is max(`x`, +0.0) (arith.maximumf: kActRelu, or
/// arith.maxnumf: kActReluNum, either operand order); then `x` is set.
int32_t reluOf(Value value, Value &x) {
  Operation *max = value.getDefiningOp();
  if (!max || !isa<arith::MaximumFOp, arith::MaxNumFOp>(max))
    return kActNone;
  Value lhs = max->getOperand(0), rhs = max->getOperand(1);
  if (matchPattern(rhs, m_PosZeroFloat()))
    x = lhs;
  else if (matchPattern(lhs, m_PosZeroFloat()))
    x = rhs;
  else
    return kActNone;
  return isa<arith::MaximumFOp>(max) ? kActRelu : kActReluNum;
}

/// Whether `value` is `lhs + rhs` in either order.
bool isSumOf(Value value, Value lhs, Value rhs) {
  auto add = value.getDefiningOp<arith::AddFOp>();
  return add && ((add.getLhs() == lhs && add.getRhs() == rhs) ||
                 (add.getLhs() == rhs && add.getRhs() == lhs));
}

/// The epilogue `generic`'s body computes, from the GEMM's element `c` and
/// the block arguments `bias` and `residual` (each may be null), the
/// kernel's order of float additions: ((c + bias) + residual), each sum in
/// either operand order, then max(., +0.0) or not, and nothing else but
/// constants. Sets `act`; false for any other body (another association
/// rounds differently).
bool readEpilogueBody(linalg::GenericOp generic, Value c, Value bias,
                      Value residual, int32_t &act) {
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1)
    return false;
  Value value = yield.getOperand(0), inner = value;
  act = reluOf(value, inner);
  unsigned computeOps = act != kActNone;
  Value withBias = c;
  if (bias) {
    auto add = residual ? inner.getDefiningOp<arith::AddFOp>() : nullptr;
    // With a residual, the bias sum is the operand of the outer sum.
    if (add)
      withBias = add.getLhs() == residual ? add.getRhs() : add.getLhs();
    else
      withBias = inner;
    if (!isSumOf(withBias, c, bias))
      return false;
    ++computeOps;
  }
  if (residual) {
    if (!isSumOf(inner, withBias, residual))
      return false;
    ++computeOps;
  } else if (inner != withBias) {
    return false;
  }
  unsigned constants = 0;
  for (Operation &op : body.without_terminator())
    constants += isa<arith::ConstantOp>(op);
  return computeOps > 0 &&
         body.getOperations().size() == 1 + computeOps + constants;
}

/// Whether `residual` can be the epilogue's addend for the single call of
/// `plan` (no loops around it) writing a buffer of `seen`'s type: a memref
/// of that same type and identity layout (so element (i, j) of the call's
/// C is at i * ldc + j in it too), defined before `op`, and nothing between
/// `op` and `generic` that could write memory (the GEMM reads it earlier
/// than the generic did).
bool isResidual(Value residual, Value seen, AffineMap map, linalg::LinalgOp op,
                linalg::GenericOp generic, const pipedream::GemmPlan &plan) {
  auto type = dyn_cast<MemRefType>(residual.getType());
  if (!type || type != seen.getType() || !type.getLayout().isIdentity() ||
      !map.isIdentity() || !plan.loops.empty())
    return false;
  if (Operation *def = residual.getDefiningOp())
    if (def->getBlock() != op->getBlock() || !def->isBeforeInBlock(op))
      return false;
  for (Operation *between = op->getNextNode(); between != generic;
       between = between->getNextNode())
    if (!isMemoryEffectFree(between) && !isa<memref::AllocOp>(between))
      return false;
  return true;
}

/// For an `op` whose output starts as zero or a bias (`init`, erased with
/// the contraction): the generic that is the only reader of that output (a
/// `memref.alloc` used by nothing else but deallocations), directly or
/// through one reshape, and that adds a bias (only when `init` is a zero
/// fill) and/or applies a ReLU: the GEMM can take that as its epilogue and
/// write the generic's own buffer. That buffer, of the reshape's type, is a
/// `memref.alloc` of the same block that nothing uses between `op` and the
/// generic (writing it earlier changes nothing then). Returns the consumer,
/// or one with a null generic.
Consumer findEpilogueConsumer(linalg::LinalgOp op, Operation *init,
                              bool zeroInit, const pipedream::GemmPlan &plan) {
  Consumer none;
  Value output = op.getDpsInitOperand(0)->get();
  auto alloc = output.getDefiningOp<memref::AllocOp>();
  int64_t cLast;
  if (!alloc || alloc->getBlock() != op->getBlock() ||
      !hasUnitInnerStride(output, cLast))
    return none;
  Operation *reader = nullptr;
  for (Operation *user : output.getUsers()) {
    if (user == op.getOperation() || user == init ||
        isa<memref::DeallocOp>(user))
      continue;
    if (reader)
      return none;
    reader = user;
  }
  if (!reader)
    return none;
  Consumer found;
  Value seen = output;
  if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(reader)) {
    Value reshaped = reader->getResult(0);
    if (!reshaped.hasOneUse())
      return none;
    found.view = reader;
    seen = reshaped;
    reader = *reshaped.getUsers().begin();
  }
  auto generic = dyn_cast<linalg::GenericOp>(reader);
  if (!generic || generic->getBlock() != op->getBlock() ||
      !op->isBeforeInBlock(generic) || generic.getNumDpsInits() != 1 ||
      generic.getNumDpsInputs() > 3 ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return none;
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  Value cArg, biasArg, residualArg;
  for (OpOperand *input : generic.getDpsInputOperands()) {
    unsigned index = input->getOperandNumber();
    Value arg = generic.getRegion().front().getArgument(index);
    if (input->get() == seen && maps[index].isIdentity() && !cArg) {
      cArg = arg;
    } else if (zeroInit && !biasArg &&
               isColumnBias(input->get(), maps[index], seen, cLast, plan)) {
      biasArg = arg;
      found.bias = input->get();
    } else if (zeroInit && !residualArg &&
               isResidual(input->get(), seen, maps[index], op, generic, plan)) {
      residualArg = arg;
      found.residual = input->get();
    } else {
      return none;
    }
  }
  if (!cArg || !maps.back().isIdentity() ||
      !readEpilogueBody(generic, cArg, biasArg, residualArg, found.act))
    return none;
  Value target = generic.getDpsInitOperand(0)->get();
  auto targetAlloc = target.getDefiningOp<memref::AllocOp>();
  if (target.getType() != seen.getType() || !targetAlloc ||
      targetAlloc->getBlock() != op->getBlock() ||
      !targetAlloc.getDynamicSizes().empty() ||
      !targetAlloc.getSymbolOperands().empty() ||
      !targetAlloc->isBeforeInBlock(generic))
    return none;
  for (Operation *user : target.getUsers()) {
    if (user == generic.getOperation())
      continue;
    Operation *ancestor = op->getBlock()->findAncestorOpInBlock(*user);
    if (!ancestor || !generic->isBeforeInBlock(ancestor))
      return none;
  }
  found.generic = generic;
  return found;
}

/// The consumer's buffer as the GEMM's C: the buffer itself, or its
/// reshape back to the output's type (the inverse of `consumer.view`),
/// created before `op` after moving the buffer's allocation there if it
/// came later.
Value targetAsOutput(linalg::LinalgOp op, Consumer &consumer) {
  Value target = consumer.generic.getDpsInitOperand(0)->get();
  Operation *targetAlloc = target.getDefiningOp();
  if (op->isBeforeInBlock(targetAlloc))
    targetAlloc->moveBefore(op);
  if (!consumer.view)
    return target;
  OpBuilder builder(op);
  auto outputType = cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
  if (auto expand = dyn_cast<memref::ExpandShapeOp>(consumer.view))
    return memref::CollapseShapeOp::create(builder, op.getLoc(), outputType,
                                           target,
                                           expand.getReassociationIndices());
  auto collapse = cast<memref::CollapseShapeOp>(consumer.view);
  return memref::ExpandShapeOp::create(builder, op.getLoc(),
                                       outputType.getShape(), target,
                                       collapse.getReassociationIndices());
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
  Consumer consumer;
  memref::AllocOp unused;
  if (zeroInit && !epilogue.empty()) {
    Operation *init = zeroFill ? zeroFill : biasFill.getOperation();
    consumer = findEpilogueConsumer(op, init, zeroFill != nullptr, plan);
    if (consumer.generic) {
      unused = plan.memrefs[2].getDefiningOp<memref::AllocOp>();
      plan.memrefs[2] = targetAsOutput(op, consumer);
    }
  }
  Value biasMemref =
      biasFill ? biasFill.getDpsInputOperand(0)->get() : consumer.bias;
  int32_t act = consumer.act;
  bool fused = biasMemref || consumer.generic;
  if (fused)
    gemm = getOrInsertGemm(module, elementType, epilogue, /*epilogue=*/true);
  Value biasBase, biasOffset, residualBase, residualOffset;
  if (biasMemref)
    pipedream::emitBasePointerAndOffset(builder, loc, biasMemref, biasBase,
                                        biasOffset);
  if (consumer.residual)
    pipedream::emitBasePointerAndOffset(builder, loc, consumer.residual,
                                        residualBase, residualOffset);
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
  if (fused) {
    auto ptrType = LLVM::LLVMPointerType::get(builder.getContext());
    // base + offset elements, or null without the operand.
    auto pointer = [&](Value memref, Value base, Value offset) -> Value {
      if (!memref)
        return LLVM::ZeroOp::create(builder, loc, ptrType);
      return LLVM::GEPOp::create(
          builder, loc, ptrType, elementType, base,
          ValueRange{arith::IndexCastOp::create(builder, loc,
                                                builder.getI64Type(), offset)});
    };
    arguments.append({pointer(biasMemref, biasBase, biasOffset),
                      pointer(consumer.residual, residualBase, residualOffset),
                      consumer.residual ? ldc : i32Const(0), i32Const(act)});
  }
  func::CallOp::create(builder, loc, gemm, arguments);
  op->erase();
  if (biasFill)
    biasFill->erase();
  if (consumer.generic)
    consumer.generic->erase();
  if (consumer.view)
    consumer.view->erase();
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
