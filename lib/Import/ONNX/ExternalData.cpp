//===- ExternalData.cpp - ONNX external data, memory-mapped ---------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "ExternalData.h"

#include "pipedream/Support/MappedFiles.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Errc.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>

#include <chrono>

using namespace llvm;
using namespace pipedream::onnx_import;

/// A user-provided string made safe for a one-line message.
static std::string quoted(StringRef text) {
  std::string out = "'";
  for (char c : text.take_front(200))
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (text.size() > 200)
    out += "...";
  return out + "'";
}

namespace {
/// A buffer whose bytes are registered as a view of their file for its
/// lifetime (pipedream/Support/MappedFiles.h).
class RegisteredBuffer : public MemoryBuffer {
public:
  RegisteredBuffer(std::unique_ptr<MemoryBuffer> inner,
                   pipedream::FileView view)
      : inner(std::move(inner)) {
    init(this->inner->getBufferStart(), this->inner->getBufferEnd(),
         /*RequiresNullTerminator=*/false);
    pipedream::registerFileView(
        ArrayRef<char>(getBufferStart(), getBufferSize()), std::move(view));
  }
  ~RegisteredBuffer() override {
    pipedream::unregisterFileView(getBufferStart());
  }
  BufferKind getBufferKind() const override {
    return inner->getBufferKind();
  }
  StringRef getBufferIdentifier() const override {
    return inner->getBufferIdentifier();
  }

private:
  std::unique_ptr<MemoryBuffer> inner;
};
} // namespace

/// Whether `path` is `dir` or lies below it (both resolved, absolute).
static bool isInside(StringRef path, StringRef dir) {
  if (!path.starts_with(dir))
    return false;
  StringRef rest = path.drop_front(dir.size());
  return rest.empty() || sys::path::is_separator(rest.front()) ||
         (!dir.empty() && sys::path::is_separator(dir.back()));
}

std::optional<ExternalBytes>
pipedream::onnx_import::readExternalData(const onnx::TensorProto &tensor,
                                         StringRef baseDir,
                                         int64_t expectedBytes,
                                         std::string &error) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : tensor.external_data()) {
    auto parseInt = [&](int64_t &out) {
      if (StringRef(entry.value()).getAsInteger(10, out) || out < 0) {
        error = "external data field " + quoted(entry.key()) + " (" +
                quoted(entry.value()) + ") is not a non-negative integer";
        return false;
      }
      return true;
    };
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset" && !parseInt(offset))
      return std::nullopt;
    else if (entry.key() == "length" && !parseInt(length))
      return std::nullopt;
  }
  if (location.empty()) {
    error = "external data has no 'location' field";
    return std::nullopt;
  }
  if (baseDir.empty()) {
    error = "cannot read external data file " + quoted(location) +
            ": this import has no model directory or disallows external "
            "data";
    return std::nullopt;
  }
  // NOTE: a NUL byte would end the path early in the system calls below,
  // naming another file than the one checked.
  if (StringRef(location).contains('\0') ||
      sys::path::is_absolute(location) ||
      any_of(make_range(sys::path::begin(location), sys::path::end(location)),
             [](StringRef part) { return part == ".."; })) {
    error = "external data field 'location' (" + quoted(location) +
            ") must be a relative path inside the model's directory";
    return std::nullopt;
  }
  SmallString<256> path(baseDir);
  sys::path::append(path, location);

  // Symbolic links may point anywhere: compare the resolved paths.
  SmallString<256> realDir, realPath;
  if (sys::fs::real_path(baseDir, realDir)) {
    error = "cannot resolve the model's directory " + quoted(baseDir);
    return std::nullopt;
  }
  if (sys::fs::real_path(path, realPath)) {
    error = "cannot open external data file " + quoted(path);
    return std::nullopt;
  }
  if (!isInside(realPath, realDir)) {
    error = "external data field 'location' (" + quoted(location) +
            ") resolves to " + quoted(realPath) +
            ", outside the model's directory";
    return std::nullopt;
  }
  sys::fs::file_status status;
  if (sys::fs::status(realPath, status) ||
      !sys::fs::is_regular_file(status)) {
    error = "external data file " + quoted(location) +
            " is not a regular file";
    return std::nullopt;
  }

  // Open once; the size checked is the size of the file mapped.
  Expected<sys::fs::file_t> file = sys::fs::openNativeFileForRead(realPath);
  if (!file) {
    consumeError(file.takeError());
    error = "cannot open external data file " + quoted(path);
    return std::nullopt;
  }
  scope_exit closeOnExit([&] { sys::fs::closeFile(*file); });
  if (sys::fs::status(*file, status)) {
    error = "cannot open external data file " + quoted(path);
    return std::nullopt;
  }
  uint64_t fileSize = status.getSize();
  if (uint64_t(offset) > fileSize) {
    error = "external data field 'offset' (" + std::to_string(offset) +
            ") is past the end of " + quoted(location) + " (" +
            std::to_string(fileSize) + " bytes)";
    return std::nullopt;
  }
  if (length < 0)
    length = int64_t(fileSize - uint64_t(offset));
  if (length != expectedBytes) {
    error = "external data field 'length' (" + std::to_string(length) +
            " bytes) does not match the tensor, which needs " +
            std::to_string(expectedBytes) + " bytes";
    return std::nullopt;
  }
  // Both are at most INT64_MAX: the sum fits in 64 unsigned bits.
  if (uint64_t(offset) + uint64_t(length) > fileSize) {
    error = "external data fields 'offset' and 'length' ([" +
            std::to_string(offset) + ", " +
            std::to_string(uint64_t(offset) + uint64_t(length)) +
            ")) exceed " + quoted(location) + " (" +
            std::to_string(fileSize) + " bytes)";
    return std::nullopt;
  }
  ExternalBytes result;
  if (length == 0)
    return result;
  // Maps the slice (page-aligned underneath) when it is 16 KiB or more.
  auto buffer = MemoryBuffer::getOpenFileSlice(*file, realPath, length, offset,
                                               /*IsVolatile=*/false);
  if (!buffer || int64_t((*buffer)->getBufferSize()) != length) {
    error = "cannot read external data file " + quoted(location);
    return std::nullopt;
  }
  // The view is registered while its buffer lives, so the bundle writer
  // can link the file instead of writing its bytes again (MappedFiles.h).
  pipedream::FileView view;
  view.path = realPath.str().str();
  view.offset = uint64_t(offset);
  view.fileSize = fileSize;
  view.mtimeNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     status.getLastModificationTime().time_since_epoch())
                     .count();
  result.buffer =
      std::make_unique<RegisteredBuffer>(std::move(*buffer), std::move(view));
  result.bytes = ArrayRef<char>(result.buffer->getBufferStart(),
                                result.buffer->getBufferSize());
  return result;
}
