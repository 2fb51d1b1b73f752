//===- ExternalData.h - ONNX external data, memory-mapped -------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Reads the data of an ONNX tensor stored as external data (weights in side
// files next to the model, what torch writes for models over 2 GB). The
// side file is memory-mapped (llvm::MemoryBuffer; slices under 16 KiB are
// read), never copied whole: a weight's dense_resource blob points into the
// mapping and keeps it alive (ImportONNX.cpp), so the importer's weight
// bytes are the page cache's, not the heap's.
//
// Every read stays inside the model's directory: the location must be a
// relative path without `..` components or NUL bytes, the file it names,
// with every symbolic link resolved, must lie inside the model's directory
// (itself resolved) and be a regular file, and [offset, offset + length)
// must lie inside the file and hold exactly the tensor's bytes.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_LIB_IMPORT_ONNX_EXTERNALDATA_H
#define PIPEDREAM_LIB_IMPORT_ONNX_EXTERNALDATA_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace pipedream::onnx_import {

/// The bytes of one tensor's external data and the buffer (a mapping of the
/// side file, or for small slices a heap copy) that owns them.
struct ExternalBytes {
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  llvm::ArrayRef<char> bytes;
};

/// Reads `tensor`'s external data, which must be `expectedBytes` long,
/// relative to the model's directory `baseDir` (empty: external data is not
/// allowed). An error is one line naming the field at fault (`location`,
/// `offset`, `length`) without the tensor's name, which the caller adds.
llvm::Expected<ExternalBytes> readExternalData(const onnx::TensorProto &tensor,
                                               llvm::StringRef baseDir,
                                               int64_t expectedBytes);

} // namespace pipedream::onnx_import

#endif // PIPEDREAM_LIB_IMPORT_ONNX_EXTERNALDATA_H
