//===- DataIndexChecksTest.cpp - host-side index checks of cuda data ------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// findBadIndex (DataIndexChecks.h): the rows a training step reads, with
// the wrap-around at the end of the data, i64 and i32, the CPU status
// record's message. The cuda paths that call it: GpuRuntimeTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "DataIndexChecks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using pipedream::runtime::BadIndex;
using pipedream::runtime::DataIndexCheck;
using pipedream::runtime::findBadIndex;

namespace {

DataIndexCheck gatherCheck() {
  DataIndexCheck check;
  check.input = "idx";
  check.lower = -61;
  check.upper = 61;
  check.node = "/tok/Gather";
  check.opType = "Gather";
  return check;
}

TEST(DataIndexChecks, FindsTheFirstBadValueOfTheStepsRows) {
  // 8 samples of 3 ids; sample 5 holds 500.
  std::vector<int64_t> ids(24, 7);
  ids[5 * 3 + 1] = 500;
  ids[6 * 3 + 2] = -62;
  DataIndexCheck check = gatherCheck();
  // Rows 0-3: all good.
  EXPECT_FALSE(findBadIndex(check, PD_DTYPE_I64, ids.data(), 3, 8, 0, 4).found);
  // Rows 4-7: sample 5 is the step's row 1.
  BadIndex bad = findBadIndex(check, PD_DTYPE_I64, ids.data(), 3, 8, 4, 4);
  ASSERT_TRUE(bad.found);
  EXPECT_EQ(bad.row, 1u);
  EXPECT_EQ(bad.message, "node '/tok/Gather' (op Gather): index 500 out of "
                         "range [-61, 61) in input 'idx'");
  // Wrapping around the end: rows 6, 7, 0, 1 -> -62 in row 0.
  bad = findBadIndex(check, PD_DTYPE_I64, ids.data(), 3, 8, 6, 4);
  ASSERT_TRUE(bad.found);
  EXPECT_EQ(bad.row, 0u);
  EXPECT_NE(bad.message.find("index -62 out of range"), std::string::npos);
  // The bounds themselves: -61 is in, 61 is out.
  ids.assign(24, -61);
  EXPECT_FALSE(findBadIndex(check, PD_DTYPE_I64, ids.data(), 3, 8, 0, 8).found);
  ids[23] = 61;
  bad = findBadIndex(check, PD_DTYPE_I64, ids.data(), 3, 8, 0, 8);
  ASSERT_TRUE(bad.found);
  EXPECT_EQ(bad.row, 7u);
}

TEST(DataIndexChecks, ReadsI32AndIgnoresOtherDtypes) {
  std::vector<int32_t> ids = {1, 2, 3, 70};
  DataIndexCheck check = gatherCheck();
  BadIndex bad = findBadIndex(check, PD_DTYPE_I32, ids.data(), 1, 4, 0, 4);
  ASSERT_TRUE(bad.found);
  EXPECT_EQ(bad.row, 3u);
  EXPECT_NE(bad.message.find("index 70 out of range"), std::string::npos);
  std::vector<float> values = {1e9f, -1e9f};
  EXPECT_FALSE(
      findBadIndex(check, PD_DTYPE_F32, values.data(), 1, 2, 0, 2).found);
}

} // namespace
