//===- OnnxWriter.cpp - trained weights back into ONNX --------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/onnx_writer.h"
#include "pipedream/npy.h"

#include <onnx/onnx_pb.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pipedream {
namespace {

std::string errnoText() { return std::strerror(errno); }

/// The ONNX TensorProto data type of a pipedream dtype.
int onnxDataType(pd_dtype dtype) {
  switch (dtype) {
  case PD_DTYPE_F32:
    return onnx::TensorProto::FLOAT;
  case PD_DTYPE_F64:
    return onnx::TensorProto::DOUBLE;
  case PD_DTYPE_F16:
    return onnx::TensorProto::FLOAT16;
  case PD_DTYPE_BF16:
    return onnx::TensorProto::BFLOAT16;
  case PD_DTYPE_I64:
    return onnx::TensorProto::INT64;
  case PD_DTYPE_I32:
    return onnx::TensorProto::INT32;
  case PD_DTYPE_I8:
    return onnx::TensorProto::INT8;
  case PD_DTYPE_I1:
    return onnx::TensorProto::BOOL;
  case PD_DTYPE_U8:
    return onnx::TensorProto::UINT8;
  case PD_DTYPE_U16:
    return onnx::TensorProto::UINT16;
  case PD_DTYPE_U32:
    return onnx::TensorProto::UINT32;
  case PD_DTYPE_U64:
    return onnx::TensorProto::UINT64;
  case PD_DTYPE_I16:
    return onnx::TensorProto::INT16;
  default:
    return onnx::TensorProto::UNDEFINED;
  }
}

/// `text` with control characters written as \\xNN: a name or path from the
/// model quoted in a message keeps it one line (runtime::oneLine's rule).
std::string oneLine(const std::string &text) {
  std::string out;
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

/// A decimal integer in [0, 2^64), digits only.
bool parseCount(const std::string &text, uint64_t &out) {
  if (text.empty() || text.size() > 20)
    return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10)
      return false;
    value = value * 10 + digit;
  }
  out = value;
  return true;
}

/// Whether a path has a ".." component.
bool hasDotDot(const std::string &path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos)
      end = path.size();
    if (path.compare(start, end - start, "..") == 0 && end - start == 2)
      return true;
    start = end + 1;
  }
  return false;
}

std::string describeInitializer(const onnx::TensorProto &tensor) {
  std::string text =
      (onnx::TensorProto::DataType_IsValid(tensor.data_type())
           ? onnx::TensorProto::DataType_Name(
                 static_cast<onnx::TensorProto::DataType>(tensor.data_type()))
           : "data type " + std::to_string(tensor.data_type())) +
      "[";
  for (int i = 0; i < tensor.dims_size(); ++i)
    text += (i ? "x" : "") + std::to_string(tensor.dims(i));
  return text + "]";
}

} // namespace

bool writeFileAtomically(const std::string &path, const std::string &bytes,
                         std::string &message) {
  std::string pattern = path + ".tmp-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = mkstemp(name.data());
  if (fd < 0) {
    message = path + ": cannot write: " + errnoText();
    return false;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      message = path + ": cannot write: " + errnoText();
      ::close(fd);
      ::unlink(name.data());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  // mkstemp creates 0600; give the file the usual permissions.
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  if (::close(fd) != 0 || std::rename(name.data(), path.c_str()) != 0) {
    message = path + ": cannot write: " + errnoText();
    ::unlink(name.data());
    return false;
  }
  return true;
}

/// OUT_DIR/model.onnx, read before training so that a missing or mismatched
/// model fails before any step runs; the weights go in after training.
struct OnnxWriter::Impl {
  bool load(pd_bundle *bundle, std::string &message) {
    std::string path = std::string(pd_bundle_dir(bundle)) + "/model.onnx";
    std::ifstream in(path, std::ios::binary);
    struct stat st;
    if (!in || stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      message = path +
                ": cannot open the model for --save-onnx (pipedream-compile "
                "copies the model into training bundles)";
      return false;
    }
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (in.bad()) {
      message = path + ": not a readable ONNX model";
      return false;
    }
    std::vector<Weight> weights;
    for (size_t i = 0; i < pd_bundle_weight_count(bundle); ++i) {
      const pd_buffer *weight = pd_bundle_weight_at(bundle, i);
      Weight w;
      w.name = pd_buffer_name(weight);
      w.dtype = pd_buffer_dtype(weight);
      w.shape.assign(pd_buffer_shape(weight),
                     pd_buffer_shape(weight) + pd_buffer_rank(weight));
      w.buffer = weight;
      weights.push_back(std::move(w));
    }
    std::string unmatched;
    if (!loadModel(path, bytes.str(), weights, unmatched, message))
      return false;
    if (!unmatched.empty())
      std::fprintf(stderr,
                   "warning: %s: no initializer for weights %s of the "
                   "bundle; --save-onnx leaves them out\n",
                   path.c_str(), unmatched.c_str());
    return true;
  }

  bool loadModel(const std::string &path, const std::string &text,
                 const std::vector<Weight> &weights, std::string &unmatched,
                 std::string &message) {
    modelPath = path;
    replaced.clear();
    if (!model.ParseFromString(text)) {
      message = modelPath + ": not a readable ONNX model";
      return false;
    }
    onnx::GraphProto *graph = model.mutable_graph();
    std::map<std::string, onnx::TensorProto *> initializers;
    for (int i = 0; i < graph->initializer_size(); ++i)
      initializers[graph->initializer(i).name()] =
          graph->mutable_initializer(i);
    for (const Weight &weight : weights) {
      auto it = initializers.find(weight.name);
      if (it == initializers.end()) {
        unmatched += (unmatched.empty() ? "'" : ", '") +
                     oneLine(weight.name) + "'";
        continue;
      }
      onnx::TensorProto &tensor = *it->second;
      bool same = tensor.data_type() == onnxDataType(weight.dtype) &&
                  static_cast<size_t>(tensor.dims_size()) ==
                      weight.shape.size();
      for (int d = 0; same && d < tensor.dims_size(); ++d)
        same = tensor.dims(d) == weight.shape[d];
      if (!same) {
        message = modelPath + ": initializer '" + oneLine(tensor.name()) +
                  "' is " + describeInitializer(tensor) +
                  " but the bundle's weight of that name is " +
                  npy::describe(weight.dtype, weight.shape);
        return false;
      }
      replaced.emplace_back(&tensor, weight);
      initializers.erase(it);
    }
    // Initializers kept as they are must not point at files next to the
    // bundle's copy: their data goes into the saved model. Every one, also
    // those whose name an earlier initializer repeats (which the map
    // above does not hold).
    std::set<const onnx::TensorProto *> weightTensors;
    for (const auto &entry : replaced)
      weightTensors.insert(entry.first);
    for (int i = 0; i < graph->initializer_size(); ++i) {
      onnx::TensorProto *tensor = graph->mutable_initializer(i);
      if (!weightTensors.count(tensor) &&
          tensor->data_location() == onnx::TensorProto::EXTERNAL &&
          !inlineExternal(*tensor, message))
        return false;
    }
    return true;
  }

  /// Writes the model with every matched initializer replaced by the
  /// weight's current value (raw little-endian data).
  bool save(const std::string &path, std::string &message) {
    std::string bytes;
    if (!serialize(bytes, message)) {
      message = path + ": " + message;
      return false;
    }
    return writeFileAtomically(path, bytes, message);
  }

  bool serialize(std::string &bytes, std::string &message) {
    // NOTE: raw_data is little-endian; so is every host pipedream runs on.
    for (auto &[tensor, weight] : replaced) {
      tensor->clear_float_data();
      tensor->clear_int32_data();
      tensor->clear_string_data();
      tensor->clear_int64_data();
      tensor->clear_double_data();
      tensor->clear_uint64_data();
      tensor->clear_external_data();
      tensor->clear_data_location();
      if (weight.buffer)
        tensor->set_raw_data(pd_buffer_const_data(weight.buffer),
                             pd_buffer_num_bytes(weight.buffer));
      else
        tensor->set_raw_data(weight.data, weight.bytes);
    }
    if (!model.SerializeToString(&bytes)) {
      message = "cannot serialize the model (over 2 GiB?)";
      return false;
    }
    return true;
  }

  bool inlineExternal(onnx::TensorProto &tensor, std::string &message) {
    std::string prefix =
        modelPath + ": initializer '" + oneLine(tensor.name()) + "'";
    std::string location;
    uint64_t offset = 0;
    int64_t length = -1;
    for (const auto &entry : tensor.external_data()) {
      // The importer's rules (lib/Import/ONNX/ExternalData.cpp): offset
      // and length are non-negative decimal integers; strtoull alone
      // took "-1" as 2^64-1 and "x" as 0.
      if (entry.key() == "location") {
        location = entry.value();
        continue;
      }
      if (entry.key() != "offset" && entry.key() != "length")
        continue;
      uint64_t value = 0;
      if (!parseCount(entry.value(), value) ||
          (entry.key() == "length" && value > uint64_t(INT64_MAX))) {
        message = prefix + ": external data field '" + entry.key() + "' ('" +
                  oneLine(entry.value()) +
                  "') is not a non-negative integer";
        return false;
      }
      if (entry.key() == "offset")
        offset = value;
      else
        length = static_cast<int64_t>(value);
    }
    // Only files inside the model's directory: a damaged or hostile
    // model.onnx must not copy /etc/passwd or ../../secret into the saved
    // model (a NUL would end the path early, naming another file than the
    // one checked).
    if (location.find('\0') != std::string::npos ||
        (!location.empty() && location[0] == '/') || hasDotDot(location)) {
      message = prefix + ": external data location '" + oneLine(location) +
                "' must be a relative path inside the model's directory";
      return false;
    }
    std::string dir = modelPath.substr(0, modelPath.rfind('/'));
    std::string file = dir + "/" + location;
    if (!location.empty()) {
      // Symbolic links may point anywhere: compare the resolved paths.
      char *realDir = realpath(dir.c_str(), nullptr);
      char *realFile = realpath(file.c_str(), nullptr);
      std::string resolvedDir = realDir ? realDir : "";
      std::string resolvedFile = realFile ? realFile : "";
      std::free(realDir);
      std::free(realFile);
      if (!resolvedDir.empty() && !resolvedFile.empty() &&
          resolvedFile.compare(0, resolvedDir.size() + 1,
                               resolvedDir + "/") != 0) {
        message = prefix + ": external data location '" + oneLine(location) +
                  "' resolves to '" + oneLine(resolvedFile) +
                  "', outside the model's directory";
        return false;
      }
    }
    std::ifstream in(file, std::ios::binary);
    std::string data;
    // The range the model announces must lie in the file: `length` sizes
    // the buffer, so a damaged entry must not allocate what it merely says
    // (an uncaught bad_alloc, or gigabytes zero-filled).
    struct stat st;
    if (!location.empty() && stat(file.c_str(), &st) == 0 &&
        S_ISREG(st.st_mode)) {
      uint64_t size = static_cast<uint64_t>(st.st_size);
      if (offset > size || (length >= 0 && static_cast<uint64_t>(length) >
                                               size - offset)) {
        message = prefix + " keeps its data at bytes [" +
                  std::to_string(offset) + ", " +
                  (length >= 0 ? std::to_string(offset + uint64_t(length))
                               : std::string("end")) +
                  ") of external file '" + oneLine(location) +
                  "', which has " + std::to_string(size) + " bytes";
        return false;
      }
    } else {
      in.setstate(std::ios::failbit);
    }
    if (in && in.seekg(static_cast<std::streamoff>(offset))) {
      std::ostringstream bytes;
      if (length >= 0) {
        data.resize(static_cast<size_t>(length));
        in.read(&data[0], length);
        if (in.gcount() != length)
          in.setstate(std::ios::failbit);
      } else {
        bytes << in.rdbuf();
        data = bytes.str();
      }
    }
    if (location.empty() || !in) {
      message = prefix + " keeps its data in external file '" +
                oneLine(location) +
                "', which cannot be read; --save-onnx needs it to write a "
                "self-contained model";
      return false;
    }
    tensor.clear_external_data();
    tensor.clear_data_location();
    tensor.set_raw_data(data);
    return true;
  }

  std::string modelPath;
  onnx::ModelProto model;
  std::vector<std::pair<onnx::TensorProto *, Weight>> replaced;
};

OnnxWriter::OnnxWriter() : impl(std::make_unique<Impl>()) {}
OnnxWriter::~OnnxWriter() = default;

bool OnnxWriter::load(pd_bundle *bundle, std::string &message) {
  return impl->load(bundle, message);
}

bool OnnxWriter::save(const std::string &path, std::string &message) {
  return impl->save(path, message);
}

bool OnnxWriter::loadModel(const std::string &modelPath,
                           const std::string &bytes,
                           const std::vector<Weight> &weights,
                           std::string &unmatched, std::string &message) {
  return impl->loadModel(modelPath, bytes, weights, unmatched, message);
}

bool OnnxWriter::serialize(std::string &bytes, std::string &message) {
  return impl->serialize(bytes, message);
}

} // namespace pipedream
