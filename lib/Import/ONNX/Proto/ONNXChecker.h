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

#include <string>

namespace pipedream::onnx_proto {

/// Highest IR version and default-domain opset the linked ONNX library's
/// checker knows. Newer models are valid but the checker would reject them.
int checkerMaxIRVersion();
int checkerMaxOpset();

/// Runs `onnx::checker::check_model` on `model`. Returns true when the model
/// passes; otherwise false with the checker's message (first line only) in
/// `error`. Never throws.
bool checkModel(const onnx::ModelProto &model, std::string &error);

} // namespace pipedream::onnx_proto

#endif // PIPEDREAM_LIB_IMPORT_ONNX_PROTO_ONNXCHECKER_H
