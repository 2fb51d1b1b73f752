//===- CheckRecordTest.cpp - decoding program.so's run-time status record -===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// takeCheckFailure (Bundle.h) on fake records: the CPU-side decoding of
// the status record that cpu-lower-run-time-checks defines and, for cuda
// bundles, cuda-define-run-time-status fills from the device record
// (docs/Bundle.md "Run-time checks"). A real record comes from compiled
// code (test/Tools/pipedream-run/run-time-checks.test, on a fake device
// GpuRuntimeTest.cpp's DeviceStatusRecordReachesTheMessage).
//
//===----------------------------------------------------------------------===//

#include "Bundle.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

using pipedream::runtime::CheckRecord;
using pipedream::runtime::takeCheckFailure;

namespace {

CheckRecord fakeRecord;
CheckRecord *fakeAccessor() { return &fakeRecord; }
CheckRecord *nullAccessor() { return nullptr; }

// The info strings as the lowering lays them out: op type, node, input,
// each NUL-terminated.
const char kGatherInfo[] = "Gather\0/tok/Gather\0idx";
const char kNoNamesInfo[] = "\0\0";

pd_function functionWith(pipedream::runtime::CheckRecordAccessor accessor) {
  pd_function function;
  function.checkRecord = accessor;
  return function;
}

TEST(CheckRecord, AFailedCheckReadsAsTheCpuMessageAndIsCleared) {
  pd_function function = functionWith(fakeAccessor);
  fakeRecord = CheckRecord{1, 500, -61, 61, kGatherInfo};
  EXPECT_EQ(takeCheckFailure(function),
            "node '/tok/Gather' (op Gather): index 500 out of range [-61, "
            "61) in input 'idx'");
  // Taken: the record is empty for the next call.
  EXPECT_EQ(fakeRecord.failed, 0);
  EXPECT_EQ(fakeRecord.info, nullptr);
  EXPECT_EQ(takeCheckFailure(function), "");
}

// A size check (nn.check_size): U+0001 before the output's name.
const char kSizeInfo[] = "NonZero\0nz\0\x01result";

TEST(CheckRecord, ASizeCheckNamesTheOutputAndTheDeclaredSize) {
  pd_function function = functionWith(fakeAccessor);
  fakeRecord = CheckRecord{1, 4, 3, 4, kSizeInfo};
  EXPECT_EQ(takeCheckFailure(function),
            "node 'nz' (op NonZero): the input values give 4 entries for "
            "output 'result', but the model declares 3 (pipedream compiles "
            "the declared size of a data-dependent output)");
  EXPECT_EQ(fakeRecord.failed, 0);
}

TEST(CheckRecord, EmptyOrMissingRecordsAreNoFailure) {
  pd_function none = functionWith(nullptr);
  EXPECT_EQ(takeCheckFailure(none), "");
  pd_function null = functionWith(nullAccessor);
  EXPECT_EQ(takeCheckFailure(null), "");
  // Not failed: whatever else the record holds is ignored and kept.
  pd_function function = functionWith(fakeAccessor);
  fakeRecord = CheckRecord{0, 7, 0, 3, kGatherInfo};
  EXPECT_EQ(takeCheckFailure(function), "");
  EXPECT_EQ(fakeRecord.value, 7);
}

TEST(CheckRecord, ExtremeValuesAndMissingNames) {
  pd_function function = functionWith(fakeAccessor);
  const int64_t min = std::numeric_limits<int64_t>::min();
  const int64_t max = std::numeric_limits<int64_t>::max();
  // Any non-zero `failed` is a failure (the device record stores 1).
  fakeRecord = CheckRecord{-1, min, -3, 3, nullptr};
  EXPECT_EQ(takeCheckFailure(function),
            "a node: index -9223372036854775808 out of range [-3, 3)");
  fakeRecord = CheckRecord{1, max, 0, max, kNoNamesInfo};
  EXPECT_EQ(takeCheckFailure(function),
            "a node: index 9223372036854775807 out of range [0, "
            "9223372036854775807)");
  EXPECT_EQ(fakeRecord.failed, 0);
}

} // namespace
