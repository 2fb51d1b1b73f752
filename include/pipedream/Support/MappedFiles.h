//===- MappedFiles.h - which bytes are views of which file ------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// A process-wide registry of the memory views of files the importer made
// (ONNX external data, lib/Import/ONNX/ExternalData.cpp): for a weight's
// bytes, the file and offset they were read from. The bundle writer uses it
// to hard-link the model's side file into the bundle instead of writing the
// weights again (lib/Compiler/Bundle.cpp, docs/Bundle.md "Linked weight
// files"). A view is registered for as long as the buffer that owns it
// lives (the weight's resource blob); lookups take the exact pointer and
// size of a registered view, so bytes a pass derived from a weight (a new
// blob) never match. Thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_SUPPORT_MAPPEDFILES_H
#define PIPEDREAM_SUPPORT_MAPPEDFILES_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace pipedream {

/// Where a registered view's bytes are: `path` (resolved, absolute) at
/// `offset`, and the file's size and modification time (nanoseconds since
/// the epoch) when it was read.
struct FileView {
  std::string path;
  uint64_t offset = 0;
  uint64_t fileSize = 0;
  int64_t mtimeNs = 0;
};

/// Registers `bytes` as a view of `view`. Replaces an earlier entry at the
/// same address.
void registerFileView(llvm::ArrayRef<char> bytes, FileView view);
/// Drops the entry at `data` (no-op if none).
void unregisterFileView(const char *data);
/// The entry whose view is exactly `bytes`, if any.
std::optional<FileView> lookupFileView(llvm::ArrayRef<char> bytes);

} // namespace pipedream

#endif // PIPEDREAM_SUPPORT_MAPPEDFILES_H
