//===- LinkedWeights.cpp - a rank's weights file linked from the model ----===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "LinkedWeights.h"

#include "Manifest.h"

#include <cerrno>
#include <cstring>

#include <sys/stat.h>

namespace pipedream {
namespace runtime {

void checkLinkedWeightsFile(const std::string &path, uint64_t bytes,
                            int64_t mtimeNs) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    throw Error(PD_ERROR_IO, path + ": cannot open the weights file: " +
                                 std::strerror(errno));
  int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 +
                  static_cast<int64_t>(st.st_mtim.tv_nsec);
  if (static_cast<uint64_t>(st.st_size) != bytes || mtime != mtimeNs)
    throw Error(PD_ERROR_FORMAT,
                path + ": changed since the bundle was compiled (it is a "
                       "link of the model's external data, " +
                    std::to_string(bytes) + " bytes then, " +
                    std::to_string(st.st_size) +
                    " now, or a newer modification time); compile again");
}

} // namespace runtime
} // namespace pipedream
