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

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

  /// What load matches an initializer against: a bundle weight's name,
  /// dtype and shape, and where its value is read when saving (`buffer`'s
  /// current data, or `data` and `bytes` when `buffer` is null).
  struct Weight {
    std::string name;
    pd_dtype dtype = PD_DTYPE_F32;
    std::vector<int64_t> shape;
    const pd_buffer *buffer = nullptr;
    const void *data = nullptr;
    size_t bytes = 0;
  };

  /// load without a bundle or a model file, for the fuzz target
  /// (fuzz/save-onnx-fuzzer.cpp): `bytes` is the model read from
  /// `modelPath` (messages name it; external data is read from its
  /// directory). The names of weights without an initializer are appended
  /// to `unmatched` ("'a', 'b'"); load prints them as a warning.
  bool loadModel(const std::string &modelPath, const std::string &bytes,
                 const std::vector<Weight> &weights, std::string &unmatched,
                 std::string &message);

  /// The model with the weights' current values, serialized (what save
  /// writes).
  bool serialize(std::string &bytes, std::string &message);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace pipedream

#endif // PIPEDREAM_ONNX_WRITER_H
