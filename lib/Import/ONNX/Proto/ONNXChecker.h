//===- ONNXChecker.h - exception-free wrapper of ONNX's checker -*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// ONNX's C++ checker throws; LLVM/MLIR code is built without exceptions.
// This wrapper is compiled with -fexceptions in its own library and returns
// errors as values.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_LIB_IMPORT_ONNX_PROTO_ONNXCHECKER_H
#define PIPEDREAM_LIB_IMPORT_ONNX_PROTO_ONNXCHECKER_H

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>

namespace pipedream::onnx_proto {

/// Highest IR version and default-domain opset the linked ONNX library's
/// checker knows. Newer models are valid but the checker would reject them.
int checkerMaxIRVersion();
int checkerMaxOpset();

/// Runs `onnx::checker::check_model` on `model`: std::nullopt when the model
/// passes, else the checker's message (first line only). Never throws.
std::optional<std::string> checkModel(const onnx::ModelProto &model);

} // namespace pipedream::onnx_proto

#endif // PIPEDREAM_LIB_IMPORT_ONNX_PROTO_ONNXCHECKER_H
