//===- ONNXChecker.cpp - exception-free wrapper of ONNX's checker ---------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "ONNXChecker.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include <exception>

using namespace pipedream;

int onnx_proto::checkerMaxIRVersion() { return onnx::IR_VERSION; }

int onnx_proto::checkerMaxOpset() {
  try {
    const auto &map =
        onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    auto it = map.find(onnx::ONNX_DOMAIN);
    if (it != map.end())
      return it->second.second;
  } catch (...) {
  }
  return 0;
}

static std::string firstLine(const std::string &text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r'))
    line.pop_back();
  return line;
}

std::optional<std::string>
onnx_proto::checkModel(const onnx::ModelProto &model) {
  try {
    onnx::checker::check_model(model);
    return std::nullopt;
  } catch (const std::exception &e) {
    return firstLine(e.what());
  } catch (...) {
    return std::string("unknown error in the ONNX checker");
  }
}
