//===- OutlineKernels.cpp - one function per distinct loop nest -----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// cpu-outline-kernels (Passes.td): every top-level loop nest of a function
// becomes a call of a private, noinline, internal kernel function; kernels that print
// the same are shared. Linear in the size of the module: each nest is
// cloned and printed once (printing with a local scope, so a nest does not
// print the module around it), and kernels are looked up by their text.
//
// NOTE: the text is the key, so two kernels share a function only if every
// op, type, attribute and constant agrees, and arguments appear in the same
// order (first use). Constants are never elided when printing: two nests that
// differ only in a large constant stay two kernels.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_OUTLINEKERNELSPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

constexpr StringLiteral kKernelPrefix = "__pipedream_kernel_";

/// True for an op the pass moves into a kernel: a loop nest that produces
/// no value (bufferized).
bool isKernelRoot(Operation *op) {
  if (op->getNumResults() != 0 || op->getNumRegions() == 0)
    return false;
  return isa<linalg::LinalgOp, LoopLikeOpInterface>(op);
}

/// True for a value the kernel recomputes instead of taking as an
/// argument: the result of an operand-free constant-like op.
bool isClonableConstant(Value value) {
  Operation *def = value.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
         def->hasTrait<OpTrait::ConstantLike>();
}

struct OutlineKernelsPass
    : pipedream::cpu::impl::OutlineKernelsPassBase<OutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A linalg op on tensors has results: not bufferized yet.
    WalkResult checked = module.walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && op->getNumResults() != 0) {
        op->emitOpError("cpu-outline-kernels expects bufferized loop nests "
                        "(memref operands); run one-shot-bufferize first");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (checked.wasInterrupted())
      return signalPassFailure();

    SmallVector<func::FuncOp> functions;
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isDeclaration() &&
          !function.getSymName().starts_with(kKernelPrefix))
        functions.push_back(function);

    SymbolTable symbols(module);
    llvm::StringMap<func::FuncOp> kernelsByText;
    unsigned created = 0, calls = 0;
    for (func::FuncOp function : functions) {
      SmallVector<Operation *> roots;
      for (Block &block : function.getBody())
        for (Operation &op : block)
          if (isKernelRoot(&op))
            roots.push_back(&op);
      for (Operation *root : roots) {
        outline(root, module, symbols, kernelsByText, created);
        ++calls;
      }
    }
    numKernels = created;
    numCalls = calls;
  }

  /// Replaces `root` with a call of its kernel (created, or an equal one).
  void outline(Operation *root, ModuleOp module, SymbolTable &symbols,
               llvm::StringMap<func::FuncOp> &kernelsByText,
               unsigned &created) {
    // Values from outside, in first-use order (operands, then uses in the
    // regions in walk order): a deterministic argument order, so that equal
    // nests print equally.
    llvm::SetVector<Value> captured;
    auto capture = [&](Value value) {
      // Defined in the nest (its ops or its regions' arguments): not
      // captured.
      if (root->isAncestor(value.getParentBlock()->getParentOp()))
        return;
      captured.insert(value);
    };
    for (Value operand : root->getOperands())
      capture(operand);
    root->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op != root)
        for (Value operand : op->getOperands())
          capture(operand);
    });
    SmallVector<Value> arguments, constants;
    for (Value value : captured)
      (isClonableConstant(value) ? constants : arguments).push_back(value);

    OpBuilder builder(root->getContext());
    SmallVector<Type> argumentTypes;
    for (Value value : arguments)
      argumentTypes.push_back(value.getType());
    auto kernel = func::FuncOp::create(
        root->getLoc(), kKernelPrefix,
        builder.getFunctionType(argumentTypes, {}));
    Block *body = kernel.addEntryBlock();
    builder.setInsertionPointToStart(body);
    IRMapping mapping;
    for (auto [value, argument] : llvm::zip(arguments, body->getArguments()))
      mapping.map(value, argument);
    for (Value value : constants)
      builder.clone(*value.getDefiningOp(), mapping);
    builder.clone(*root, mapping);
    func::ReturnOp::create(builder, root->getLoc());

    // The key: the kernel's text without its name and locations.
    std::string text;
    {
      llvm::raw_string_ostream os(text);
      OpPrintingFlags flags;
      flags.useLocalScope().assumeVerified();
      for (Operation &op : *body)
        op.print(os, flags);
      os << " : ";
      os << kernel.getFunctionType();
    }
    func::FuncOp callee;
    auto found = kernelsByText.find(text);
    if (found != kernelsByText.end()) {
      callee = found->second;
      kernel->erase();
    } else {
      kernel.setPrivate();
      // LLVM must not inline the kernel back into its callers (that would
      // undo the sharing); internal linkage like every non-entry function
      // (cpu-generate-entry-points ran before).
      kernel->setAttr("passthrough",
                      builder.getArrayAttr({builder.getStringAttr("noinline")}));
      kernel->setAttr("llvm.linkage",
                      LLVM::LinkageAttr::get(builder.getContext(),
                                             LLVM::Linkage::Internal));
      kernel.setSymName((kKernelPrefix + llvm::Twine(created)).str());
      symbols.insert(kernel, module.getBody()->end());
      kernelsByText[text] = kernel;
      callee = kernel;
      ++created;
    }
    builder.setInsertionPoint(root);
    func::CallOp::create(builder, root->getLoc(), callee, arguments);
    root->erase();
  }
};

} // namespace
