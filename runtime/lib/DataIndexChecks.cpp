//===- DataIndexChecks.cpp - host-side index checks of cuda data ----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "DataIndexChecks.h"

#include <cstdint>
#include <cstring>

namespace pipedream {
namespace runtime {

std::string describeBadIndex(const DataIndexCheck &check, int64_t value) {
  return (check.node.empty() ? std::string("a node")
                             : "node '" + check.node + "'") +
         " (op " + check.opType + "): index " + std::to_string(value) +
         " out of range [" + std::to_string(check.lower) + ", " +
         std::to_string(check.upper) + ") in input '" + check.input + "'";
}

BadIndex findBadIndex(const DataIndexCheck &check, pd_dtype dtype,
                      const void *data, size_t perRow, size_t numSamples,
                      size_t firstRow, size_t rows) {
  BadIndex bad;
  if ((dtype != PD_DTYPE_I64 && dtype != PD_DTYPE_I32) || !numSamples ||
      !data)
    return bad;
  const auto *bytes = static_cast<const unsigned char *>(data);
  size_t size = dtype == PD_DTYPE_I64 ? 8 : 4;
  for (size_t r = 0; r < rows; ++r) {
    size_t row = (firstRow + r) % numSamples;
    const unsigned char *at = bytes + row * perRow * size;
    for (size_t e = 0; e < perRow; ++e) {
      int64_t value;
      if (dtype == PD_DTYPE_I64) {
        std::memcpy(&value, at + e * 8, 8);
      } else {
        int32_t narrow;
        std::memcpy(&narrow, at + e * 4, 4);
        value = narrow;
      }
      if (value >= check.lower && value < check.upper)
        continue;
      bad.found = true;
      bad.row = r;
      bad.message = describeBadIndex(check, value);
      return bad;
    }
  }
  return bad;
}

} // namespace runtime
} // namespace pipedream
