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
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pipedream {
namespace {

std::string describeBuffer(const pd_buffer *buffer) {
  return pipedream::npy::describe(
      pd_buffer_dtype(buffer),
      std::vector<int64_t>(pd_buffer_shape(buffer),
                           pd_buffer_shape(buffer) + pd_buffer_rank(buffer)));
}

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

std::string describeInitializer(const onnx::TensorProto &tensor) {
  std::string text =
      onnx::TensorProto::DataType_Name(
          static_cast<onnx::TensorProto::DataType>(tensor.data_type())) +
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
    modelPath = std::string(pd_bundle_dir(bundle)) + "/model.onnx";
    std::ifstream in(modelPath, std::ios::binary);
    struct stat st;
    if (!in || stat(modelPath.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      message = modelPath +
                ": cannot open the model for --save-onnx (pipedream-compile "
                "copies the model into training bundles)";
      return false;
    }
    std::ostringstream bytes;
    bytes << in.rdbuf();
    std::string text = bytes.str();
    if (in.bad() || !model.ParseFromString(text)) {
      message = modelPath + ": not a readable ONNX model";
      return false;
    }
    onnx::GraphProto *graph = model.mutable_graph();
    std::map<std::string, onnx::TensorProto *> initializers;
    for (int i = 0; i < graph->initializer_size(); ++i)
      initializers[graph->initializer(i).name()] =
          graph->mutable_initializer(i);
    std::string unmatched;
    for (size_t i = 0; i < pd_bundle_weight_count(bundle); ++i) {
      pd_buffer *weight = pd_bundle_weight_at(bundle, i);
      auto it = initializers.find(pd_buffer_name(weight));
      if (it == initializers.end()) {
        unmatched += (unmatched.empty() ? "'" : ", '") +
                     std::string(pd_buffer_name(weight)) + "'";
        continue;
      }
      onnx::TensorProto &tensor = *it->second;
      bool same =
          tensor.data_type() == onnxDataType(pd_buffer_dtype(weight)) &&
          static_cast<size_t>(tensor.dims_size()) == pd_buffer_rank(weight);
      for (int d = 0; same && d < tensor.dims_size(); ++d)
        same = tensor.dims(d) == pd_buffer_shape(weight)[d];
      if (!same) {
        message = modelPath + ": initializer '" + tensor.name() + "' is " +
                  describeInitializer(tensor) +
                  " but the bundle's weight of that name is " +
                  describeBuffer(weight);
        return false;
      }
      replaced.emplace_back(&tensor, weight);
      initializers.erase(it);
    }
    if (!unmatched.empty())
      std::fprintf(stderr,
                   "warning: %s: no initializer for weights %s of the "
                   "bundle; --save-onnx leaves them out\n",
                   modelPath.c_str(), unmatched.c_str());
    // Initializers kept as they are must not point at files next to the
    // bundle's copy: their data goes into the saved model.
    for (auto &[name, tensor] : initializers)
      if (tensor->data_location() == onnx::TensorProto::EXTERNAL &&
          !inlineExternal(*tensor, message))
        return false;
    return true;
  }

  /// Writes the model with every matched initializer replaced by the
  /// weight's current value (raw little-endian data).
  bool save(const std::string &path, std::string &message) {
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
      tensor->set_raw_data(pd_buffer_const_data(weight),
                           pd_buffer_num_bytes(weight));
    }
    std::string bytes;
    if (!model.SerializeToString(&bytes)) {
      message = path + ": cannot serialize the model (over 2 GiB?)";
      return false;
    }
    return writeFileAtomically(path, bytes, message);
  }

  bool inlineExternal(onnx::TensorProto &tensor, std::string &message) {
    std::string location;
    uint64_t offset = 0;
    int64_t length = -1;
    for (const auto &entry : tensor.external_data()) {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::strtoull(entry.value().c_str(), nullptr, 10);
      else if (entry.key() == "length")
        length = std::strtoll(entry.value().c_str(), nullptr, 10);
    }
    std::string dir = modelPath.substr(0, modelPath.rfind('/'));
    std::string file = dir + "/" + location;
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
        message = modelPath + ": initializer '" + tensor.name() +
                  "' keeps its data at bytes [" + std::to_string(offset) +
                  ", " +
                  (length >= 0 ? std::to_string(offset + uint64_t(length))
                               : std::string("end")) +
                  ") of external file '" + location + "', which has " +
                  std::to_string(size) + " bytes";
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
      message = modelPath + ": initializer '" + tensor.name() +
                "' keeps its data in external file '" + location +
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
  std::vector<std::pair<onnx::TensorProto *, pd_buffer *>> replaced;
};

OnnxWriter::OnnxWriter() : impl(std::make_unique<Impl>()) {}
OnnxWriter::~OnnxWriter() = default;

bool OnnxWriter::load(pd_bundle *bundle, std::string &message) {
  return impl->load(bundle, message);
}

bool OnnxWriter::save(const std::string &path, std::string &message) {
  return impl->save(path, message);
}

} // namespace pipedream
