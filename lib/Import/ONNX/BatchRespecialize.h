//===- BatchRespecialize.h - static batch -> micro-batch --------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Re-specializes a model exported with a static batch B0 to another batch
// B1 (the micro-batch, or a --input-shape that overrides dimension 0).
//
// The importer first imports the model at its own batch (the reference),
// then again at B1 with a BatchRespecializer watching every node. It
// propagates which dimension of each value carries the batch, from axis 0
// of the batch graph inputs through the ops (batch-dim propagation). A
// constant that bakes B0 in is rewritten only where the entry provably lands
// on a batch-carrying dimension (a Reshape target entry, an Expand shape
// entry, a Slice bound over the whole batch axis, a constant operand whose
// slices along the batch dimension are all equal); anything else it cannot
// prove is reported naming the node. After every node each result's shape
// must be the reference's with only the batch dimension resized, so a
// change the rules did not foresee is an error, never a silent difference.
// See docs/Importer.md "Static batch".
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_LIB_IMPORT_ONNX_BATCHRESPECIALIZE_H
#define PIPEDREAM_LIB_IMPORT_ONNX_BATCHRESPECIALIZE_H

#include "Importer.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace pipedream::onnx_import {

/// What the reference import (at the model's own batch) knew of a value.
struct ReferenceValue {
  llvm::SmallVector<int64_t> shape;
  std::shared_ptr<const HostTensor> constant;
};

/// Where a value carries the batch: dimension `axis` has size
/// `outer * B * inner` (outer and inner are 1 unless a reshape merged the
/// batch with neighbouring dimensions, e.g. [B*T, C]).
struct BatchDim {
  int64_t axis = 0;
  int64_t outer = 1, inner = 1;
  bool operator==(const BatchDim &o) const {
    return axis == o.axis && outer == o.outer && inner == o.inner;
  }
};

/// Tracks the batch dimension through one import at the new batch.
class BatchRespecializer {
public:
  BatchRespecializer(int64_t oldBatch, int64_t newBatch,
                     llvm::StringMap<ReferenceValue> reference)
      : oldBatch(oldBatch), newBatch(newBatch),
        reference(std::move(reference)) {}

  /// Graph input `name` carries the batch at dimension 0.
  void addBatchInput(llvm::StringRef name) { batchDims[name] = BatchDim{}; }

  /// Before `node` is converted: decides where its results carry the batch
  /// and rewrites constant inputs that bake the old batch in (`overrides`:
  /// input index -> replacement). An error (its message without the node
  /// header) when the batch cannot be re-specialized through the node.
  llvm::Error prepare(const onnx::NodeProto &node, int64_t sinceVersion,
                      const llvm::StringMap<ImportedValue> &values,
                      llvm::DenseMap<size_t, ImportedValue> &overrides);
  /// After `node` is converted: every result must have the reference's shape
  /// with only the batch dimension resized. An error otherwise.
  llvm::Error finish(const onnx::NodeProto &node,
                     const llvm::StringMap<ImportedValue> &values);

  /// Graph output `name` must hold its samples as rows: where it carries
  /// the batch, it must be dimension 0 with nothing outside it (a merged
  /// [B*T, C] is fine). Elsewhere, the static size the model gives its
  /// leading dimension may have been the batch (a reshape that mixes
  /// samples), which cannot be told. An error otherwise.
  llvm::Error checkOutput(llvm::StringRef name) const;

  int64_t getOldBatch() const { return oldBatch; }
  int64_t getNewBatch() const { return newBatch; }
  /// "3 Reshape targets, 1 Expand shape" (empty when nothing was rewritten).
  std::string rewrittenSummary() const;

private:
  /// The batch dimension of the value named `name`, if it carries one.
  std::optional<BatchDim> batchDimOf(llvm::StringRef name) const;
  const ReferenceValue *ref(llvm::StringRef name) const;
  /// The new shape of a value whose reference shape is `old`.
  llvm::SmallVector<int64_t> resized(llvm::ArrayRef<int64_t> old,
                                     std::optional<BatchDim> dim) const;
  /// Where the batch of input `in` (reference shape, batch at `dim`) lands
  /// in the reference output shape `out` of a reshape, or why it cannot be
  /// told.
  llvm::Expected<BatchDim> locateInReshape(llvm::ArrayRef<int64_t> in,
                                           const BatchDim &dim,
                                           llvm::ArrayRef<int64_t> out) const;
  /// Operand `index` (no batch) meets the batch at its dimension `dim`
  /// (none when negative): it must broadcast there (size 1), or be a
  /// constant that is the same for every sample, which is then sliced to
  /// size 1 (or, with `tile`, tiled to `newSize`: Concat does not broadcast).
  llvm::Error
  checkBroadcastOperand(const onnx::NodeProto &node, size_t index, int64_t dim,
                        int64_t newSize, bool tile,
                        const llvm::StringMap<ImportedValue> &values,
                        llvm::DenseMap<size_t, ImportedValue> &overrides);
  std::string batchWords() const;

  int64_t oldBatch, newBatch;
  llvm::StringMap<ReferenceValue> reference;
  llvm::StringMap<BatchDim> batchDims;
  /// Expected batch dimension of each output of the node being converted;
  /// `computed` false: only inputs without a batch, results keep their
  /// reference shape (constants may still pick the batch up by folding).
  struct Pending {
    bool computed = false;
    llvm::SmallVector<std::optional<BatchDim>> outputs;
  } pending;
  /// Rewritten constants by kind ("Reshape target" -> 3).
  std::map<std::string, int> rewritten;
};

} // namespace pipedream::onnx_import

#endif // PIPEDREAM_LIB_IMPORT_ONNX_BATCHRESPECIALIZE_H
