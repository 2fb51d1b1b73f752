//===- Workspace.cpp - the temporaries a CPU program keeps ----------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Workspace.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <map>
#include <string>
#include <optional>

using namespace mlir;

namespace pipedream::cpu {

namespace {

/// A slot of a split function's frame (cpu-split-large-functions): the
/// function split (the name before ".part<n>") and the byte offset.
using FrameSlot = std::pair<std::string, int64_t>;

/// The frame slot `address` names inside a part function (its frame is
/// argument 0: the argument itself, or an i8 getelementptr of it by a
/// constant), with the part function it is in.
std::optional<std::pair<FrameSlot, Operation *>> frameSlotOf(Value address) {
  int64_t offset = 0;
  if (auto gep = address.getDefiningOp<LLVM::GEPOp>()) {
    if (gep.getIndices().size() != 1 || !gep.getElemType().isInteger(8))
      return std::nullopt;
    auto attr = llvm::dyn_cast_if_present<IntegerAttr>(gep.getIndices()[0]);
    if (!attr)
      return std::nullopt;
    offset = attr.getInt();
    address = gep.getBase();
  }
  auto arg = dyn_cast<BlockArgument>(address);
  if (!arg || arg.getArgNumber() != 0)
    return std::nullopt;
  auto func = dyn_cast<LLVM::LLVMFuncOp>(arg.getOwner()->getParentOp());
  if (!func)
    return std::nullopt;
  StringRef name = func.getSymName();
  size_t part = name.rfind(".part");
  if (part == StringRef::npos)
    return std::nullopt;
  return std::make_pair(FrameSlot(name.substr(0, part).str(), offset),
                        func.getOperation());
}

/// What the parts of split functions store into their frames. The split
/// reuses a slot once its value is dead, so a slot may have a store in
/// several parts: a part's load reads the store of the latest part called
/// before it (a part loads its live-ins first and stores its results last,
/// and the split function calls its parts in order).
struct FrameStores {
  /// Per part function, its position among its split function's calls.
  llvm::DenseMap<Operation *, int64_t> partOrder;
  /// Per slot, (position of the storing part, the value stored).
  std::map<FrameSlot, llvm::SmallVector<std::pair<int64_t, Value>>> stores;

  explicit FrameStores(ModuleOp module) {
    module.walk([&](LLVM::LLVMFuncOp func) {
      int64_t position = 0;
      func.walk([&](LLVM::CallOp call) {
        std::optional<StringRef> name = call.getCallee();
        if (!name || !name->starts_with((func.getSymName() + ".part").str()))
          return;
        if (auto part = module.lookupSymbol<LLVM::LLVMFuncOp>(*name))
          partOrder.try_emplace(part.getOperation(), position++);
      });
    });
    module.walk([&](LLVM::StoreOp store) {
      auto slot = frameSlotOf(store.getAddr());
      if (!slot)
        return;
      auto order = partOrder.find(slot->second);
      if (order != partOrder.end())
        stores[slot->first].emplace_back(order->second, store.getValue());
    });
  }

  /// The value a load of `address` reads, if it is a frame slot of a part.
  std::optional<Value> valueLoadedFrom(Value address) const {
    auto slot = frameSlotOf(address);
    if (!slot)
      return std::nullopt;
    auto order = partOrder.find(slot->second);
    auto it = stores.find(slot->first);
    if (order == partOrder.end() || it == stores.end())
      return std::nullopt;
    std::optional<std::pair<int64_t, Value>> latest;
    for (const auto &store : it->second)
      if (store.first < order->second &&
          (!latest || store.first > latest->first))
        latest = store;
    if (!latest)
      return std::nullopt;
    return latest->second;
  }
};

/// The constant value of `v`, if it is one this evaluator knows. A value
/// the split of a large function passed through its frame (a load of a
/// slot) is the value its defining part stored there.
std::optional<int64_t> evaluate(Value v, const DataLayout &layout,
                                const FrameStores &frames, int depth = 0) {
  if (depth > 16)
    return std::nullopt;
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (auto load = dyn_cast<LLVM::LoadOp>(op)) {
    std::optional<Value> stored = frames.valueLoadedFrom(load.getAddr());
    if (!stored)
      return std::nullopt;
    return evaluate(*stored, layout, frames, depth + 1);
  }
  if (auto c = dyn_cast<LLVM::ConstantOp>(op)) {
    if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
      return i.getValue().getSExtValue();
    return std::nullopt;
  }
  auto binary = [&](Value a, Value b, auto fn) -> std::optional<int64_t> {
    auto x = evaluate(a, layout, frames, depth + 1);
    auto y = evaluate(b, layout, frames, depth + 1);
    if (!x || !y)
      return std::nullopt;
    return fn(*x, *y);
  };
  if (auto add = dyn_cast<LLVM::AddOp>(op))
    return binary(add.getLhs(), add.getRhs(),
                  [](int64_t x, int64_t y) { return x + y; });
  if (auto sub = dyn_cast<LLVM::SubOp>(op))
    return binary(sub.getLhs(), sub.getRhs(),
                  [](int64_t x, int64_t y) { return x - y; });
  if (auto mul = dyn_cast<LLVM::MulOp>(op))
    return binary(mul.getLhs(), mul.getRhs(),
                  [](int64_t x, int64_t y) { return x * y; });
  if (auto cast = dyn_cast<LLVM::PtrToIntOp>(op)) {
    // The memref lowering's size: getelementptr null[n] of the element type.
    auto gep = cast.getArg().getDefiningOp<LLVM::GEPOp>();
    if (!gep || !gep.getBase().getDefiningOp<LLVM::ZeroOp>() ||
        gep.getIndices().size() != 1)
      return std::nullopt;
    std::optional<int64_t> n;
    auto index = gep.getIndices()[0];
    if (auto value = llvm::dyn_cast_if_present<Value>(index))
      n = evaluate(value, layout, frames, depth + 1);
    else if (auto attr = llvm::dyn_cast_if_present<IntegerAttr>(index))
      n = attr.getInt();
    if (!n)
      return std::nullopt;
    return *n * static_cast<int64_t>(layout.getTypeSize(gep.getElemType()));
  }
  return std::nullopt;
}

} // namespace

WorkspaceEstimate estimateWorkspace(ModuleOp module,
                                    llvm::ArrayRef<std::string> roots,
                                    int64_t cachedCap) {
  DataLayout layout(module);
  FrameStores frames(module);
  // Per function: its allocation sites' constant bytes, dynamic sites and
  // direct callees.
  struct Info {
    int64_t bytes = 0;
    int64_t dynamicSites = 0;
    llvm::SmallVector<LLVM::LLVMFuncOp> callees;
  };
  llvm::DenseMap<Operation *, Info> infos;
  auto infoOf = [&](LLVM::LLVMFuncOp func) -> Info & {
    auto [it, inserted] = infos.try_emplace(func.getOperation());
    if (!inserted)
      return it->second;
    Info &info = it->second;
    func.walk([&](LLVM::CallOp call) {
      std::optional<StringRef> name = call.getCallee();
      if (!name)
        return;
      if (*name == "malloc" || *name == "__pipedream_alloc") {
        if (call.getNumOperands() == 0)
          return;
        if (auto bytes = evaluate(call.getOperand(0), layout, frames))
          info.bytes += std::max<int64_t>(0, *bytes);
        else
          ++info.dynamicSites;
        return;
      }
      if (auto callee = module.lookupSymbol<LLVM::LLVMFuncOp>(*name))
        if (!callee.isExternal())
          info.callees.push_back(callee);
    });
    return info;
  };
  // NOTE: __pipedream_alloc itself calls malloc with its argument (not a
  // constant): it is a site of its callers, not a function to walk.
  auto reach = [&](LLVM::LLVMFuncOp root, llvm::DenseSet<Operation *> &seen,
                   WorkspaceEstimate &sum) {
    llvm::SmallVector<LLVM::LLVMFuncOp> stack{root};
    while (!stack.empty()) {
      LLVM::LLVMFuncOp f = stack.pop_back_val();
      if (f.getSymName() == "__pipedream_alloc" ||
          f.getSymName() == "__pipedream_free" ||
          !seen.insert(f.getOperation()).second)
        continue;
      Info &info = infoOf(f);
      sum.bytes += info.bytes;
      sum.dynamicSites += info.dynamicSites;
      for (LLVM::LLVMFuncOp c : info.callees)
        stack.push_back(c);
    }
  };
  WorkspaceEstimate total;
  int64_t largestRoot = 0;
  llvm::DenseSet<Operation *> seen;
  for (const std::string &name : roots) {
    auto root = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
    if (!root || root.isExternal())
      continue;
    reach(root, seen, total);
    llvm::DenseSet<Operation *> own;
    WorkspaceEstimate alone;
    reach(root, own, alone);
    largestRoot = std::max(largestRoot, alone.bytes);
  }
  total.bytes = std::min(total.bytes, cachedCap + largestRoot);
  return total;
}

} // namespace pipedream::cpu
