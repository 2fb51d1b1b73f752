//===- save-onnx-fuzzer.cpp - libFuzzer target for --save-onnx's reader ---===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The second reading of a training bundle's model.onnx, by `pipedream-run
// --save-onnx` and the Python package's save_onnx (runtime/onnx,
// OnnxWriter::loadModel): protobuf's parser, then the matching of the
// bundle's weights with the initializers, then the reading of the external
// data of the initializers kept as they are. The bundle's weights are made
// from the input's own initializers, so that fuzzing reaches the matching
// and the external data: initializer i becomes a weight of its own dtype
// and shape when i % 3 == 0, one of another shape (a mismatch) when
// i % 7 == 5, and stays an initializer otherwise. The model's directory is
// a temporary folder holding `data.bin` (64 bytes), `sub/part.bin`
// (16 bytes), a folder `dir` and a link `out` to its parent, so locations
// inside, outside and through links all occur (the seeds, fuzz/corpus/
// save-onnx/, use them).
//
// Checks: a failure is one line starting with the model's path; a success
// serializes, parses again, holds every matched weight's bytes as raw data
// and no initializer with external data.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "pipedream/onnx_writer.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

using namespace pipedream;

namespace {

bool toDtype(int type, pd_dtype &out, size_t &size) {
  switch (type) {
  case onnx::TensorProto::FLOAT: out = PD_DTYPE_F32; size = 4; return true;
  case onnx::TensorProto::DOUBLE: out = PD_DTYPE_F64; size = 8; return true;
  case onnx::TensorProto::FLOAT16: out = PD_DTYPE_F16; size = 2; return true;
  case onnx::TensorProto::BFLOAT16: out = PD_DTYPE_BF16; size = 2; return true;
  case onnx::TensorProto::INT64: out = PD_DTYPE_I64; size = 8; return true;
  case onnx::TensorProto::INT32: out = PD_DTYPE_I32; size = 4; return true;
  case onnx::TensorProto::INT16: out = PD_DTYPE_I16; size = 2; return true;
  case onnx::TensorProto::INT8: out = PD_DTYPE_I8; size = 1; return true;
  case onnx::TensorProto::BOOL: out = PD_DTYPE_I1; size = 1; return true;
  case onnx::TensorProto::UINT8: out = PD_DTYPE_U8; size = 1; return true;
  case onnx::TensorProto::UINT16: out = PD_DTYPE_U16; size = 2; return true;
  case onnx::TensorProto::UINT32: out = PD_DTYPE_U32; size = 4; return true;
  case onnx::TensorProto::UINT64: out = PD_DTYPE_U64; size = 8; return true;
  default: return false;
  }
}

void writeFile(const std::string &path, size_t bytes) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    fuzz::fatal("cannot create", path);
  for (size_t i = 0; i < bytes; ++i)
    std::fputc(static_cast<int>(i * 7 + 1), f);
  std::fclose(f);
}

std::string removeTree;
void cleanUp() {
  if (!removeTree.empty())
    (void)!std::system(("rm -rf '" + removeTree + "'").c_str());
}

/// The model's directory (made once per process).
const std::string &modelDir() {
  static const std::string dir = [] {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/pd-save-onnx-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    if (!mkdtemp(name.data()))
      fuzz::fatal("mkdtemp failed", pattern);
    std::string root = name.data();
    removeTree = root;
    std::atexit(cleanUp);
    std::string bundle = root + "/bundle";
    mkdir(bundle.c_str(), 0700);
    mkdir((bundle + "/sub").c_str(), 0700);
    mkdir((bundle + "/dir").c_str(), 0700);
    writeFile(bundle + "/data.bin", 64);
    writeFile(bundle + "/sub/part.bin", 16);
    writeFile(root + "/secret.bin", 8);
    if (symlink("..", (bundle + "/out").c_str()) != 0)
      fuzz::fatal("symlink failed", bundle);
    return bundle;
  }();
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string path = modelDir() + "/model.onnx";
  std::string bytes(reinterpret_cast<const char *>(data), size);

  // The weights: from the input's own initializers (see above).
  onnx::ModelProto probe;
  std::vector<OnnxWriter::Weight> weights;
  std::vector<std::vector<unsigned char>> values;
  if (probe.ParseFromString(bytes)) {
    const onnx::GraphProto &graph = probe.graph();
    for (int i = 0; i < graph.initializer_size() && weights.size() < 64;
         ++i) {
      const onnx::TensorProto &t = graph.initializer(i);
      bool exact = i % 3 == 0, mismatch = i % 7 == 5;
      pd_dtype dtype;
      size_t elementSize = 0;
      if ((!exact && !mismatch) || !toDtype(t.data_type(), dtype, elementSize))
        continue;
      OnnxWriter::Weight w;
      w.name = t.name();
      w.dtype = dtype;
      uint64_t count = 1;
      bool small = t.dims_size() <= 8;
      for (int d = 0; small && d < t.dims_size(); ++d) {
        small = t.dims(d) >= 0 && t.dims(d) <= 4096;
        count *= small ? static_cast<uint64_t>(t.dims(d)) : 1;
        small = small && count <= 4096;
        w.shape.push_back(t.dims(d));
      }
      if (!small)
        continue;
      if (mismatch)
        w.shape.push_back(2);
      values.emplace_back(count * elementSize, static_cast<unsigned char>(i));
      weights.push_back(std::move(w));
    }
    // A weight the model does not have.
    OnnxWriter::Weight extra;
    extra.name = "fuzz.no-such-initializer";
    weights.push_back(extra);
    values.emplace_back();
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    weights[i].data = values[i].data();
    weights[i].bytes = values[i].size();
  }

  OnnxWriter writer;
  std::string unmatched, message;
  // PIPEDREAM_FUZZ_VERBOSE=1: each input's outcome on stderr (to see what
  // a seed reaches).
  static const bool verbose = std::getenv("PIPEDREAM_FUZZ_VERBOSE");
  if (!writer.loadModel(path, bytes, weights, unmatched, message)) {
    if (verbose)
      std::fprintf(stderr, "  error: %s\n", message.c_str());
    fuzz::checkError(message, path + ": ");
    return 0;
  }
  if (!unmatched.empty() && unmatched.find('\n') != std::string::npos)
    fuzz::fatal("unmatched weights are not one line", unmatched);
  std::string saved;
  if (!writer.serialize(saved, message)) {
    fuzz::checkError(message, "");
    return 0;
  }
  if (verbose)
    std::fprintf(stderr, "  saved %zu bytes; unmatched: %s\n", saved.size(),
                 unmatched.c_str());
  onnx::ModelProto back;
  if (!back.ParseFromString(saved))
    fuzz::fatal("the saved model does not parse", path);
  std::map<std::string, const onnx::TensorProto *> last;
  for (const onnx::TensorProto &t : back.graph().initializer()) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      fuzz::fatal("the saved model keeps external data", t.name());
    last[t.name()] = &t;
  }
  // The first weight of each name replaced the last initializer of it.
  std::set<std::string> seen;
  for (size_t i = 0; i < weights.size(); ++i) {
    auto it = last.find(weights[i].name);
    if (!seen.insert(weights[i].name).second || it == last.end())
      continue;
    const std::string &raw = it->second->raw_data();
    if (raw.size() != values[i].size() ||
        (!raw.empty() && std::memcmp(raw.data(), values[i].data(),
                                     raw.size()) != 0))
      fuzz::fatal("a saved weight does not hold its value", it->first);
  }
  return 0;
}
