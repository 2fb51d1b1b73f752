//===- MappedFiles.cpp - which bytes are views of which file --------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Support/MappedFiles.h"

#include <map>
#include <mutex>

namespace pipedream {

namespace {
struct Entry {
  size_t size = 0;
  FileView view;
};
struct Registry {
  std::mutex mutex;
  std::map<const char *, Entry> entries;
};
Registry &registry() {
  static Registry *r = new Registry(); // NOTE: never destroyed, so blobs
                                       // freed at exit may still unregister.
  return *r;
}
} // namespace

void registerFileView(llvm::ArrayRef<char> bytes, FileView view) {
  if (bytes.empty())
    return;
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.entries[bytes.data()] = Entry{bytes.size(), std::move(view)};
}

void unregisterFileView(const char *data) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.entries.erase(data);
}

std::optional<FileView> lookupFileView(llvm::ArrayRef<char> bytes) {
  if (bytes.empty())
    return std::nullopt;
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.entries.find(bytes.data());
  if (it == r.entries.end() || it->second.size != bytes.size())
    return std::nullopt;
  return it->second.view;
}

} // namespace pipedream
