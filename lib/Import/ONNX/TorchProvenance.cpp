//===- TorchProvenance.cpp - what torch's exporter says a weight is -------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// See TorchProvenance.h.
//
//===----------------------------------------------------------------------===//

#include "TorchProvenance.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>

using namespace mlir;

namespace pipedream::onnx_import {

namespace {
constexpr llvm::StringLiteral kSignatureKey =
    "pkg.torch.export.ExportedProgram.graph_signature";
constexpr llvm::StringLiteral kFoldedFromKey =
    "pkg.onnxscript.optimizer.folded_from";
constexpr llvm::StringLiteral kInputKindKey =
    "pkg.torch.export.graph_signature.InputSpec.kind";
// Field numbers of `metadata_props` (onnx.proto, IR version 10).
constexpr int kGraphMetadataField = 16;
constexpr int kValueInfoMetadataField = 4;
constexpr int kTensorMetadataField = 16;

/// The quoted strings of a Python list literal (`['a', "b'c"]`).
llvm::SmallVector<std::string> parseStringList(llvm::StringRef text) {
  llvm::SmallVector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    char quote = text[at];
    if (quote != '\'' && quote != '"') {
      ++at;
      continue;
    }
    size_t end = text.find(quote, at + 1);
    if (end == llvm::StringRef::npos)
      break;
    out.push_back(text.slice(at + 1, end).str());
    at = end + 1;
  }
  return out;
}
} // namespace

llvm::SmallVector<std::pair<std::string, std::string>>
readMetadataProps(const google::protobuf::Message &message, int fieldNumber) {
  llvm::SmallVector<std::pair<std::string, std::string>> out;
  const google::protobuf::Reflection *reflection = message.GetReflection();
  const google::protobuf::FieldDescriptor *field =
      message.GetDescriptor()->FindFieldByNumber(fieldNumber);
  if (field && field->name() == "metadata_props" && field->is_repeated() &&
      field->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
    for (int i = 0, e = reflection->FieldSize(message, field); i < e; ++i) {
      onnx::StringStringEntryProto entry;
      entry.CopyFrom(reflection->GetRepeatedMessage(message, field, i));
      out.emplace_back(entry.key(), entry.value());
    }
    return out;
  }
  const google::protobuf::UnknownFieldSet &unknown =
      reflection->GetUnknownFields(message);
  for (int i = 0, e = unknown.field_count(); i < e; ++i) {
    const google::protobuf::UnknownField &f = unknown.field(i);
    if (f.number() != fieldNumber ||
        f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::StringStringEntryProto entry;
    if (entry.ParseFromString(f.length_delimited()))
      out.emplace_back(entry.key(), entry.value());
  }
  return out;
}

TorchProvenance::TorchProvenance(const onnx::GraphProto &graph) {
  auto kindOf = [](llvm::StringRef word) -> std::optional<Kind> {
    if (word == "PARAMETER")
      return Kind::Parameter;
    if (word == "BUFFER")
      return Kind::Buffer;
    if (word == "CONSTANT_TENSOR" || word == "CUSTOM_OBJ")
      return Kind::Constant;
    return std::nullopt;
  };
  for (auto &[key, value] : readMetadataProps(graph, kGraphMetadataField)) {
    if (key != kSignatureKey)
      continue;
    hasSignature = true;
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(value).split(lines, '\n');
    for (llvm::StringRef line : lines) {
      // NAME: KIND target='fqn' [persistent=...]
      auto [name, rest] = line.split(": ");
      rest = rest.trim();
      llvm::StringRef word = rest.take_until([](char c) { return c == ' '; });
      std::optional<Kind> kind = kindOf(word);
      size_t target = rest.find("target=");
      if (!kind || target == llvm::StringRef::npos)
        continue;
      llvm::SmallVector<std::string> quoted =
          parseStringList(rest.drop_front(target + 7));
      if (!quoted.empty())
        targets[quoted.front()] = *kind;
    }
  }
  auto noteValue = [&](llvm::StringRef name,
                       llvm::ArrayRef<std::pair<std::string, std::string>>
                           props) {
    for (auto &[key, value] : props) {
      if (key == kFoldedFromKey)
        foldedFrom[name] = parseStringList(value);
      else if (key == kInputKindKey)
        if (std::optional<Kind> kind = kindOf(value))
          valueKinds[name] = *kind;
    }
  };
  for (const auto &list : {graph.input(), graph.value_info(), graph.output()})
    for (const onnx::ValueInfoProto &info : list)
      noteValue(info.name(), readMetadataProps(info, kValueInfoMetadataField));
  llvm::StringSet<> initializers;
  for (const onnx::TensorProto &init : graph.initializer()) {
    initializers.insert(init.name());
    noteValue(init.name(), readMetadataProps(init, kTensorMetadataField));
  }
  // An initializer neither in the signature nor recorded as a fold is a
  // constant the exporter wrote, if folds are recorded at all, or if no
  // parameter was folded away (each is an initializer of its own name).
  // Otherwise a folded parameter could hide behind such a name, and the
  // structural rule decides.
  unrecordedAreConstants =
      !foldedFrom.empty() ||
      llvm::all_of(targets, [&](const auto &entry) {
        return entry.second != Kind::Parameter ||
               initializers.contains(entry.first());
      });
}

DictionaryAttr TorchProvenance::originOf(llvm::StringRef name,
                                         Builder &builder) const {
  if (!hasSignature)
    return {};
  auto make = [&](llvm::StringRef kind, llvm::ArrayRef<std::string> sources) {
    SmallVector<Attribute> names;
    for (const std::string &s : sources)
      names.push_back(builder.getStringAttr(s));
    return builder.getDictionaryAttr(
        {builder.getNamedAttr("kind", builder.getStringAttr(kind)),
         builder.getNamedAttr("sources", builder.getArrayAttr(names))});
  };
  auto byKind = [&](Kind kind) {
    std::string self = name.str();
    switch (kind) {
    case Kind::Parameter:
      return make("parameter", self);
    case Kind::Buffer:
      return make("buffer", self);
    case Kind::Constant:
      return make("constant", self);
    }
    return DictionaryAttr();
  };
  if (auto it = targets.find(name); it != targets.end())
    return byKind(it->second);
  if (auto it = valueKinds.find(name); it != valueKinds.end())
    return byKind(it->second);
  auto folded = foldedFrom.find(name);
  if (folded == foldedFrom.end())
    // Neither a parameter, a buffer nor a fold of them: a constant the
    // exporter wrote itself (a scalar, a shape).
    return unrecordedAreConstants ? make("constant", {}) : DictionaryAttr();
  llvm::SmallVector<std::string> parameters, buffers;
  bool others = false;
  for (const std::string &source : folded->second) {
    auto it = targets.find(source);
    if (it != targets.end() && it->second == Kind::Parameter)
      parameters.push_back(source);
    else if (it != targets.end() && it->second == Kind::Buffer)
      buffers.push_back(source);
    else
      others = true;
  }
  if (parameters.empty())
    return make("constant", buffers);
  return make(others || !buffers.empty() ? "derived" : "folded", parameters);
}

} // namespace pipedream::onnx_import
