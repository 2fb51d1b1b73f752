//===- MergeKernelModules.cpp - one gpu.module for all kernels ------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// gpu-kernel-outlining puts each kernel in a gpu.module of its own; each
// would become a ptxas + fatbinary run at compile time and a module load
// when program.so is loaded. This pass moves all kernels (and the symbols
// they use, e.g. constant globals) into one gpu.module and gives kernels
// names PTX accepts as they are: `<host function>_k<N>` with every
// character other than a letter, digit or `_` replaced by `_`.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

namespace pipedream::cuda {
#define GEN_PASS_DEF_MERGEKERNELMODULESPASS
#include "pipedream/Target/GPU/Passes.h.inc"
} // namespace pipedream::cuda

using namespace mlir;

namespace {

std::string sanitize(StringRef name) {
  std::string result;
  for (char c : name)
    result += (llvm::isAlnum(c) || c == '_') ? c : '_';
  if (result.empty() || llvm::isDigit(result[0]))
    result = "_" + result;
  return result;
}

struct MergeKernelModulesPass
    : pipedream::cuda::impl::MergeKernelModulesPassBase<
          MergeKernelModulesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> modules(module.getOps<gpu::GPUModuleOp>());
    if (modules.empty())
      return;
    if (module.lookupSymbol(moduleName) &&
        !llvm::any_of(modules, [&](gpu::GPUModuleOp m) {
          return m.getName() == moduleName;
        })) {
      module.emitError("symbol '") << moduleName << "' already exists";
      return signalPassFailure();
    }

    // The new names, in launch order.
    llvm::DenseMap<SymbolRefAttr, std::string> newNames;
    llvm::StringMap<unsigned> perFunction;
    llvm::StringSet<> used;
    SmallVector<gpu::LaunchFuncOp> launches;
    module.walk([&](gpu::LaunchFuncOp launch) {
      launches.push_back(launch);
      SymbolRefAttr kernel = launch.getKernel();
      if (newNames.count(kernel))
        return;
      auto parent = launch->getParentOfType<FunctionOpInterface>();
      std::string base =
          sanitize(parent ? parent.getName() : StringRef("kernel"));
      std::string name;
      do {
        name = base + "_k" + std::to_string(perFunction[base]++);
      } while (!used.insert(name).second);
      newNames[kernel] = name;
    });

    OpBuilder builder(modules.front());
    auto merged = gpu::GPUModuleOp::create(builder, module.getLoc(),
                                           "__pipedream_merging");
    if (Attribute targets = modules.front().getTargetsAttr())
      merged.setTargetsAttr(cast<ArrayAttr>(targets));
    SymbolTable mergedSymbols(merged);
    for (gpu::GPUModuleOp kernels : modules) {
      for (Operation &op :
           llvm::make_early_inc_range(kernels.getBody()->getOperations())) {
        auto symbol = dyn_cast<SymbolOpInterface>(op);
        if (!symbol)
          continue;
        if (auto func = dyn_cast<gpu::GPUFuncOp>(op)) {
          auto ref = SymbolRefAttr::get(
              kernels.getNameAttr(),
              {FlatSymbolRefAttr::get(func.getNameAttr())});
          auto it = newNames.find(ref);
          if (it == newNames.end()) {
            op.erase(); // never launched
            continue;
          }
          func.setName(it->second);
          op.moveBefore(merged.getBody(), merged.getBody()->end());
          continue;
        }
        // Globals and declarations the kernels share: one copy.
        if (mergedSymbols.lookup(symbol.getName())) {
          op.erase();
          continue;
        }
        op.moveBefore(merged.getBody(), merged.getBody()->end());
        mergedSymbols.insert(&op);
      }
    }
    for (gpu::LaunchFuncOp launch : launches) {
      std::string name = newNames.lookup(launch.getKernel());
      launch.setKernelAttr(SymbolRefAttr::get(
          builder.getStringAttr(moduleName),
          {FlatSymbolRefAttr::get(builder.getContext(), name)}));
    }
    for (gpu::GPUModuleOp kernels : modules)
      kernels.erase();
    merged.setName(moduleName);
  }
};

} // namespace
