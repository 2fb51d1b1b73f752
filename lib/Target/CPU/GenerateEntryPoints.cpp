//===- GenerateEntryPoints.cpp - pipedream_<fn>(void **buffers) -----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Adds the exported entry wrapper of docs/Bundle.md to every public function
// of a bufferized module: `pipedream_<fn>(void **buffers)` loads one pointer
// per argument, wraps it in a memref descriptor of the argument's static
// shape (offset 0, row-major strides) and calls the function, or, when
// nothing else uses the function and its body is one block, takes the body
// itself (no call with thousands of descriptor arguments for LLVM to
// chew on). Every other function gets internal linkage, so the wrappers
// are all program.so exports.
//
// The wrapper is built before the LLVM conversion, with
// `unrealized_conversion_cast` from the descriptor struct to the memref; the
// conversion of the call produces the inverse cast and
// `reconcile-unrealized-casts` folds both away. This keeps the MLIR default
// calling convention (descriptors) for all internal functions, including
// helpers generated with dynamic shapes, which the bare-pointer convention
// cannot express.
//
// Every function with a body is then renamed `__pipedream.<name>`: the
// lowering after this pass declares external symbols by name (libm's `exp`,
// `erf`... from convert-math-to-libm, `malloc` and `free` from the memref
// lowering) and would otherwise reuse a user function called `@exp` as the
// libm declaration. The exported wrappers keep `<prefix><name>`.
//
// Functions marked `pipedream.cpu.export` (the native rank entries of
// pipe-lower-rank-programs, which already have a C signature) are exported
// as they are: no wrapper, no renaming, external linkage. A private
// declaration `<prefix><name>(!llvm.ptr)` they call is replaced by the
// wrapper of `<name>`.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Passes.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace pipedream::cpu {
#define GEN_PASS_DEF_GENERATEENTRYPOINTSPASS
#include "pipedream/Target/CPU/Passes.h.inc"
} // namespace pipedream::cpu

using namespace mlir;

namespace {

struct GenerateEntryPointsPass
    : pipedream::cpu::impl::GenerateEntryPointsPassBase<
          GenerateEntryPointsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    LLVMTypeConverter typeConverter(ctx);
    SymbolTable symbols(module);

    SmallVector<func::FuncOp> entries;
    llvm::SmallPtrSet<Operation *, 8> wrappers;
    // NOTE: `pipedream.cpu.export` functions (the native rank entries of
    // pipe-lower-rank-programs) are exported as they are: no wrapper, their
    // own name, external linkage.
    auto exported = [](func::FuncOp func) {
      return func->hasAttr("pipedream.cpu.export");
    };
    for (auto func : module.getOps<func::FuncOp>())
      if (func.isPublic() && !func.isDeclaration() && !exported(func))
        entries.push_back(func);
    // Uses of each function's symbol (calls, references), in one walk.
    llvm::DenseMap<StringAttr, unsigned> uses;
    if (auto all = SymbolTable::getSymbolUses(&module.getBodyRegion()))
      for (const SymbolTable::SymbolUse &use : *all)
        ++uses[use.getSymbolRef().getRootReference()];

    auto internal = LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal);
    auto external = LLVM::LinkageAttr::get(ctx, LLVM::Linkage::External);
    for (auto func : module.getOps<func::FuncOp>()) {
      if (exported(func)) {
        func.setPublic();
        func->setAttr("llvm.linkage", external);
      }
      else if (!func.isDeclaration())
        func->setAttr("llvm.linkage", internal);
    }

    for (func::FuncOp func : entries) {
      if (func.getNumResults() != 0) {
        func.emitError("entry function '")
            << func.getSymName()
            << "' still returns values after buffer-results-to-out-params";
        return signalPassFailure();
      }
      for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
        auto memref = dyn_cast<MemRefType>(type);
        if (!memref || !memref.hasStaticShape() ||
            !memref.getLayout().isIdentity()) {
          func.emitError("entry function '")
              << func.getSymName() << "' argument " << index << " has type "
              << type
              << "; the bundle ABI needs statically shaped, identity-layout "
                 "memrefs";
          return signalPassFailure();
        }
      }

      std::string name = symbolPrefix + func.getSymName().str();
      Type ptrType = LLVM::LLVMPointerType::get(ctx);
      // A declaration of the wrapper (an exported function calls it) is
      // replaced by the wrapper itself.
      if (auto decl = symbols.lookup<func::FuncOp>(name);
          decl && decl.isDeclaration() &&
          decl.getFunctionType() ==
              FunctionType::get(ctx, {ptrType}, {}))
        symbols.erase(decl);
      if (symbols.lookup(name)) {
        func.emitError("entry wrapper symbol '") << name << "' already exists";
        return signalPassFailure();
      }
      Location loc = func.getLoc();
      OpBuilder builder(ctx);
      builder.setInsertionPointAfter(func);
      auto wrapper = func::FuncOp::create(
          builder, loc, name, builder.getFunctionType({ptrType}, {}));
      Block *body = wrapper.addEntryBlock();
      builder.setInsertionPointToStart(body);
      Value buffers = body->getArgument(0);

      SmallVector<Value> args;
      for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
        auto memref = cast<MemRefType>(type);
        Value slot = LLVM::GEPOp::create(
            builder, loc, ptrType, ptrType, buffers,
            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(index)});
        Value pointer = LLVM::LoadOp::create(builder, loc, ptrType, slot);
        Value descriptor = MemRefDescriptor::fromStaticShape(
            builder, loc, typeConverter, memref, pointer);
        args.push_back(UnrealizedConversionCastOp::create(builder, loc,
                                                          memref, descriptor)
                           .getResult(0));
      }
      // A function nothing else uses, with one block (structured control
      // flow), becomes the wrapper's body. Called, its memrefs would be
      // passed as descriptors, 5 + 2 x rank scalars each: a training step
      // with thousands of buffers made one call with thousands of
      // arguments, and LLVM's called-value propagation, which revisits the
      // call whenever one argument's value changes, grew quadratically
      // with it (issue 16).
      if (!uses.lookup(func.getSymNameAttr()) &&
          llvm::hasSingleElement(func.getBody())) {
        Block &callee = func.getBody().front();
        for (auto [argument, value] : llvm::zip(callee.getArguments(), args))
          argument.replaceAllUsesWith(value);
        Operation *ret = callee.getTerminator();
        body->getOperations().splice(body->end(), callee.getOperations(),
                                     callee.begin(), ret->getIterator());
        builder.setInsertionPointToEnd(body);
        func::ReturnOp::create(builder, ret->getLoc());
        // NOTE: erasing the function keeps `symbols` consistent.
        symbols.erase(func);
      } else {
        func::CallOp::create(builder, loc, func, args);
        func::ReturnOp::create(builder, loc);
      }
      // NOTE: the wrapper itself keeps external linkage: it is the ABI.
      wrappers.insert(wrapper);
      symbols.insert(wrapper);
    }

    // Move the implementations out of the way of external symbols (libm,
    // libc) that later passes declare; a C identifier cannot contain `.`,
    // so no C library name can take this form.
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isDeclaration() || wrappers.contains(func) || exported(func))
        continue;
      std::string name = ("__pipedream." + func.getSymName()).str();
      if (symbols.lookup(name)) {
        func.emitError("internal symbol '") << name << "' already exists";
        return signalPassFailure();
      }
      if (failed(symbols.rename(func, StringAttr::get(ctx, name)))) {
        func.emitError("cannot rename '") << func.getSymName() << "'";
        return signalPassFailure();
      }
    }
  }
};

} // namespace
