//===- pipedream/onnx_writer.h - trained weights back into ONNX -*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Writes a training bundle's model.onnx (pipedream-compile copies the model
// into training and pipeline bundles) back out with the bundle's current
// weights: what `pipedream-run --save-onnx` and the Python package's
// `save_onnx` do. Separate from the runtime library, which stays free of
// ONNX and protobuf; links the ONNX protobuf classes.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_ONNX_WRITER_H
#define PIPEDREAM_ONNX_WRITER_H

#include "pipedream/runtime.h"

#include <memory>
#include <string>

namespace pipedream {

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory, renamed over `path` once complete. On failure `message` is
/// "PATH: cannot write: REASON".
bool writeFileAtomically(const std::string &path, const std::string &bytes,
                         std::string &message);

/// The bundle's model.onnx with the bundle's weights in place of the
/// initializers of the same names.
class OnnxWriter {
public:
  OnnxWriter();
  ~OnnxWriter();
  OnnxWriter(const OnnxWriter &) = delete;
  OnnxWriter &operator=(const OnnxWriter &) = delete;

  /// Reads DIR/model.onnx of `bundle` (pd_bundle_dir) and matches its
  /// initializers with the bundle's weights (dtype and shape checked), so
  /// that a missing or mismatched model fails before any training step.
  /// Weights without an initializer are left out with a warning on stderr.
  bool load(pd_bundle *bundle, std::string &message);

  /// Writes the model to `path` (atomically) with every matched initializer
  /// replaced by the weight's current value (pd_buffer_const_data).
  bool save(const std::string &path, std::string &message);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace pipedream

#endif // PIPEDREAM_ONNX_WRITER_H
