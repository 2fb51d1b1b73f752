//===- ExternalData.cpp - ONNX external data, memory-mapped ---------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "ExternalData.h"
#include "HostTensor.h"

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

Expected<ExternalBytes> pipedream::onnx_import::readExternalData(
    const onnx::TensorProto &tensor, StringRef baseDir, int64_t expectedBytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : tensor.external_data()) {
    bool isOffset = entry.key() == "offset";
    if (entry.key() == "location") {
      location = entry.value();
    } else if (isOffset || entry.key() == "length") {
      int64_t &out = isOffset ? offset : length;
      if (StringRef(entry.value()).getAsInteger(10, out) || out < 0)
        return makeError("external data field " + quoted(entry.key()) + " (" +
                         quoted(entry.value()) +
                         ") is not a non-negative integer");
    }
  }
  if (location.empty())
    return makeError("external data has no 'location' field");
  if (baseDir.empty())
    return makeError(
        "cannot read external data file " + quoted(location) +
        ": this import has no model directory or disallows external "
        "data");
  // NOTE: a NUL byte would end the path early in the system calls below,
  // naming another file than the one checked.
  if (StringRef(location).contains('\0') ||
      sys::path::is_absolute(location) ||
      any_of(make_range(sys::path::begin(location), sys::path::end(location)),
             [](StringRef part) { return part == ".."; })) {
    return makeError("external data field 'location' (" + quoted(location) +
                     ") must be a relative path inside the model's directory");
  }
  SmallString<256> path(baseDir);
  sys::path::append(path, location);

  // Symbolic links may point anywhere: compare the resolved paths.
  SmallString<256> realDir, realPath;
  if (sys::fs::real_path(baseDir, realDir))
    return makeError("cannot resolve the model's directory " + quoted(baseDir));
  if (sys::fs::real_path(path, realPath))
    return makeError("cannot open external data file " + quoted(path));
  if (!isInside(realPath, realDir))
    return makeError("external data field 'location' (" + quoted(location) +
                     ") resolves to " + quoted(realPath) +
                     ", outside the model's directory");
  sys::fs::file_status status;
  if (sys::fs::status(realPath, status) ||
      !sys::fs::is_regular_file(status)) {
    return makeError("external data file " + quoted(location) +
                     " is not a regular file");
  }

  // Open once; the size checked is the size of the file mapped.
  Expected<sys::fs::file_t> file = sys::fs::openNativeFileForRead(realPath);
  if (!file) {
    consumeError(file.takeError());
    return makeError("cannot open external data file " + quoted(path));
  }
  scope_exit closeOnExit([&] { sys::fs::closeFile(*file); });
  if (sys::fs::status(*file, status))
    return makeError("cannot open external data file " + quoted(path));
  uint64_t fileSize = status.getSize();
  if (uint64_t(offset) > fileSize)
    return makeError("external data field 'offset' (" + std::to_string(offset) +
                     ") is past the end of " + quoted(location) + " (" +
                     std::to_string(fileSize) + " bytes)");
  if (length < 0)
    length = int64_t(fileSize - uint64_t(offset));
  if (length != expectedBytes)
    return makeError("external data field 'length' (" + std::to_string(length) +
                     " bytes) does not match the tensor, which needs " +
                     std::to_string(expectedBytes) + " bytes");
  // Both are at most INT64_MAX: the sum fits in 64 unsigned bits.
  if (uint64_t(offset) + uint64_t(length) > fileSize)
    return makeError("external data fields 'offset' and 'length' ([" +
                     std::to_string(offset) + ", " +
                     std::to_string(uint64_t(offset) + uint64_t(length)) +
                     ")) exceed " + quoted(location) + " (" +
                     std::to_string(fileSize) + " bytes)");
  ExternalBytes result;
  if (length == 0)
    return result;
  // Maps the slice (page-aligned underneath) when it is 16 KiB or more.
  auto buffer = MemoryBuffer::getOpenFileSlice(*file, realPath, length, offset,
                                               /*IsVolatile=*/false);
  if (!buffer || int64_t((*buffer)->getBufferSize()) != length)
    return makeError("cannot read external data file " + quoted(location));
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
