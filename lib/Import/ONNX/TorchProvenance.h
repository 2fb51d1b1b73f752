//===- TorchProvenance.h - what torch's exporter says a weight is -*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// torch's dynamo exporter (torch.onnx.export(..., dynamo=True)) records, in
// ONNX metadata, what each initializer was in PyTorch:
//   - the graph's `pkg.torch.export.ExportedProgram.graph_signature`: one
//     line per input of the exported program, `NAME: PARAMETER
//     target='fqn'`, `BUFFER target='fqn'`, `CONSTANT_TENSOR target=...`
//     or `USER_INPUT`; parameters and buffers keep their state_dict names
//     (`fqn`) as initializer names;
//   - a value's `pkg.onnxscript.optimizer.folded_from`: the values a constant that
//     onnxscript's optimizer folded at export was computed from (a Python
//     list literal), e.g. the transpose of a Linear weight, or an attention
//     mask computed from the input's static shape.
// So an initializer is a parameter when the signature says so, the fold of
// parameters when its sources hold one, and a constant otherwise (the
// exporter made it: a folded mask, a rotary table, a scalar). ONNX 1.12's
// protobuf predates `metadata_props` on graphs, values and tensors (IR 10):
// the reader takes them from the unknown fields then.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_LIB_IMPORT_ONNX_TORCHPROVENANCE_H
#define PIPEDREAM_LIB_IMPORT_ONNX_TORCHPROVENANCE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <onnx/onnx_pb.h>

#include <string>
#include <utility>

namespace pipedream::onnx_import {

/// `metadata_props` (key, value) of an ONNX message that has the field
/// `fieldNumber` in ONNX >= 1.16, read by reflection or from the unknown
/// fields of an older protobuf.
llvm::SmallVector<std::pair<std::string, std::string>>
readMetadataProps(const google::protobuf::Message &message, int fieldNumber);

/// The torch export record of one graph.
class TorchProvenance {
public:
  explicit TorchProvenance(const onnx::GraphProto &graph);

  /// Whether the graph carries torch's export signature.
  bool present() const { return hasSignature; }

  /// `nn.origin` for initializer `name` (NNBase.td), or null when the graph
  /// says nothing about it.
  mlir::DictionaryAttr originOf(llvm::StringRef name,
                                mlir::Builder &builder) const;

private:
  enum class Kind { Parameter, Buffer, Constant };
  bool hasSignature = false;
  /// Whether an initializer without a record is a constant (see the
  /// constructor).
  bool unrecordedAreConstants = false;
  /// Torch name (target) -> kind, from the signature.
  llvm::StringMap<Kind> targets;
  /// Value name -> its folded_from list.
  llvm::StringMap<llvm::SmallVector<std::string>> foldedFrom;
  /// Value name -> InputSpec kind recorded on the value itself.
  llvm::StringMap<Kind> valueKinds;
};

} // namespace pipedream::onnx_import

#endif // PIPEDREAM_LIB_IMPORT_ONNX_TORCHPROVENANCE_H
