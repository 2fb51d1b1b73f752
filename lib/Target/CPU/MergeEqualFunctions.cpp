//===- MergeEqualFunctions.cpp - lower equal bundle functions once --------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// cpu-merge-equal-functions (Passes.td): public functions that differ only
// in their names, locations and annotations are lowered once; each
// other copy becomes its exported entry wrapper forwarding to the kept
// function's wrapper. Functions are bucketed by a structural hash (linear
// in the module's size) and compared in full only within a bucket.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SmallVector.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_MERGEEQUALFUNCTIONSPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kExportAttr = "pipedream.cpu.export";

/// `dict` without the model's and the schedule's annotations (Passes.td):
/// names, initial values, stages, which no lowering reads.
DictionaryAttr withoutAnnotations(MLIRContext *ctx, DictionaryAttr dict) {
  SmallVector<NamedAttribute> kept;
  if (dict)
    for (NamedAttribute attr : dict) {
      StringRef name = attr.getName().getValue();
      if (!name.starts_with("nn.") && !name.starts_with("onnx.") &&
          !name.starts_with("pipe."))
        kept.push_back(attr);
    }
  return DictionaryAttr::get(ctx, kept);
}

/// Everything of `func` but its body that lowering can see: the function
/// type, the discardable attributes and every argument's and result's
/// attributes, annotations left out.
SmallVector<Attribute> signatureOf(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  SmallVector<Attribute> key;
  key.push_back(TypeAttr::get(func.getFunctionType()));
  key.push_back(
      withoutAnnotations(ctx, func->getDiscardableAttrDictionary()));
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    key.push_back(withoutAnnotations(ctx, func.getArgAttrDict(i)));
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    key.push_back(withoutAnnotations(ctx, func.getResultAttrDict(i)));
  return key;
}

/// A hash equal for equal functions (names and locations left out).
llvm::hash_code hashFunction(func::FuncOp func,
                             ArrayRef<Attribute> signature) {
  llvm::hash_code hash = llvm::hash_combine_range(signature);
  func.getBody().walk([&](Operation *op) {
    hash = llvm::hash_combine(
        hash, OperationEquivalence::computeHash(
                  op, OperationEquivalence::ignoreHashValue,
                  OperationEquivalence::ignoreHashValue,
                  OperationEquivalence::IgnoreLocations));
  });
  return hash;
}

struct Candidate {
  func::FuncOp func;
  SmallVector<Attribute> signature;
};

bool equalFunctions(Candidate &a, Candidate &b) {
  return a.signature == b.signature &&
         OperationEquivalence::isRegionEquivalentTo(
             &a.func.getBody(), &b.func.getBody(),
             OperationEquivalence::IgnoreLocations);
}

struct MergeEqualFunctionsPass
    : pipedream::cpu::impl::MergeEqualFunctionsPassBase<
          MergeEqualFunctionsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SymbolTable symbols(module);

    // Functions something other than a func.call refers to (a pipe.program
    // still in the module names its stages): kept, never replaced. And the
    // functions that are called: only their calls need redirecting (one
    // walk of the module, not one per replaced function).
    llvm::DenseSet<StringAttr> pinned, called;
    if (auto uses = SymbolTable::getSymbolUses(&module.getBodyRegion()))
      for (const SymbolTable::SymbolUse &use : *uses)
        (isa<func::CallOp>(use.getUser()) ? called : pinned)
            .insert(use.getSymbolRef().getRootReference());

    // Kept functions by hash; (replaced, kept) pairs in module order.
    llvm::DenseMap<llvm::hash_code, SmallVector<Candidate, 1>> kept;
    SmallVector<std::pair<func::FuncOp, func::FuncOp>> merges;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func.isPublic() || func.isDeclaration() || func->hasAttr(kExportAttr))
        continue;
      Candidate candidate{func, signatureOf(func)};
      SmallVector<Candidate, 1> &bucket =
          kept[hashFunction(func, candidate.signature)];
      auto equal = llvm::find_if(bucket, [&](Candidate &other) {
        return equalFunctions(other, candidate);
      });
      if (equal != bucket.end() && !pinned.contains(func.getSymNameAttr()))
        merges.emplace_back(func, equal->func);
      else if (equal == bucket.end())
        bucket.push_back(std::move(candidate));
    }

    Type ptrType = LLVM::LLVMPointerType::get(ctx);
    FunctionType wrapperType = FunctionType::get(ctx, {ptrType}, {});
    // A declaration of `name` with the wrapper's type, or null.
    auto wrapperDeclaration = [&](StringRef name) -> func::FuncOp {
      auto decl = symbols.lookup<func::FuncOp>(name);
      if (decl && decl.isDeclaration() &&
          decl.getFunctionType() == wrapperType)
        return decl;
      return nullptr;
    };
    OpBuilder builder(ctx);
    for (auto [replaced, target] : merges) {
      std::string name = symbolPrefix + replaced.getSymName().str();
      std::string targetName = symbolPrefix + target.getSymName().str();
      for (StringRef symbol : {StringRef(name), StringRef(targetName)}) {
        if (symbols.lookup(symbol) && !wrapperDeclaration(symbol)) {
          replaced.emitError("cannot merge '")
              << replaced.getSymName() << "' into the equal function '"
              << target.getSymName() << "': the symbol '" << symbol
              << "' of an entry wrapper exists";
          return signalPassFailure();
        }
      }
      // Calls of the replaced function (its only uses) call the kept one.
      if (called.contains(replaced.getSymNameAttr()) &&
          failed(SymbolTable::replaceAllSymbolUses(
              replaced, target.getSymNameAttr(), module))) {
        replaced.emitError("cannot redirect the uses of '")
            << replaced.getSymName() << "'";
        return signalPassFailure();
      }
      // The kept function's wrapper, declared: cpu-generate-entry-points
      // replaces the declaration with the wrapper.
      if (!symbols.lookup(targetName)) {
        builder.setInsertionPointToStart(module.getBody());
        auto decl = func::FuncOp::create(builder, target.getLoc(),
                                         targetName, wrapperType);
        decl.setPrivate();
        symbols.insert(decl);
      }
      // The forwarder takes the place of the replaced function and of a
      // declaration of its wrapper (uses by name stay valid).
      if (func::FuncOp decl = wrapperDeclaration(name))
        symbols.erase(decl);
      Location loc = replaced.getLoc();
      builder.setInsertionPoint(replaced);
      auto forwarder = func::FuncOp::create(builder, loc, name, wrapperType);
      forwarder->setAttr(kExportAttr, builder.getUnitAttr());
      Block *body = forwarder.addEntryBlock();
      builder.setInsertionPointToStart(body);
      func::CallOp::create(builder, loc, targetName, TypeRange{},
                           body->getArguments());
      func::ReturnOp::create(builder, loc);
      symbols.erase(replaced);
      symbols.insert(forwarder);
      ++numMerged;
    }
  }
};

} // namespace
