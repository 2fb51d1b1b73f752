//===- ReplicaGroupTest.cpp - the replicas' gradient all-reduce ------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// ReplicaGroup over a user-defined transport that records its all-reduce
// calls: host gradients are packed into one bucket; device gradients (a
// cuda bundle's, which the runtime sums with the NCCL transport's
// ncclAllReduce) are never touched on the host: each goes to the
// transport's all-reduce as it is, by its own pointer, one call each.
// Runs without a GPU (the "device" pointers are host memory here); the
// NCCL path itself has not run on a GPU.
//
//===----------------------------------------------------------------------===//

#include "ReplicaGroup.h"
#include "Transport.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace {

struct Recorder {
  std::vector<std::pair<void *, size_t>> calls;
};

pd_status noSend(void *, size_t, int64_t, const void *, size_t, double) {
  return PD_ERROR_UNSUPPORTED;
}
pd_status noRecv(void *, size_t, int64_t, void *, size_t, double) {
  return PD_ERROR_UNSUPPORTED;
}
/// Two members holding equal values: the sum doubles them.
pd_status recordAllReduce(void *state, const size_t *, size_t numRanks,
                          void *data, size_t count, pd_dtype dtype, double) {
  static_cast<Recorder *>(state)->calls.push_back({data, count});
  EXPECT_EQ(numRanks, 2u);
  EXPECT_EQ(dtype, PD_DTYPE_F32);
  float *values = static_cast<float *>(data);
  for (size_t i = 0; i < count; ++i)
    values[i] *= 2;
  return PD_OK;
}

TEST(ReplicaGroup, DeviceGradientsAreSummedInPlaceOneCallEach) {
  Recorder recorder;
  pd_transport_ops ops{noSend, noRecv, nullptr, nullptr, recordAllReduce};
  pd_transport *transport = nullptr;
  ASSERT_EQ(pd_transport_create(&ops, &recorder, 0, 2, &transport), PD_OK);
  {
    pipedream::runtime::ReplicaGroup group(*transport, 0, 0, {0, 1});
    float a[3] = {1, 2, 3}, b[5] = {4, 5, 6, 7, 8}, c[2] = {9, 10};
    using Span = pipedream::runtime::ReduceSpan;
    // Host gradients: one packed bucket (not the gradients' own memory).
    std::vector<Span> host = {{a, 3, PD_DTYPE_F32, "a"},
                              {b, 5, PD_DTYPE_F32, "b"},
                              {c, 2, PD_DTYPE_F32, "c"}};
    EXPECT_EQ(group.allReduce(host), 1u);
    ASSERT_EQ(recorder.calls.size(), 1u);
    EXPECT_EQ(recorder.calls[0].second, 10u);
    EXPECT_NE(recorder.calls[0].first, static_cast<void *>(a));
    EXPECT_EQ(a[2], 6);
    EXPECT_EQ(b[0], 8);
    EXPECT_EQ(c[1], 20);
    // Device gradients: each by its own pointer, in place, in order; also
    // when the sum overlaps the drain (start, then finish).
    recorder.calls.clear();
    std::vector<Span> device = {{a, 3, PD_DTYPE_F32, "a", true},
                                {b, 5, PD_DTYPE_F32, "b", true},
                                {c, 2, PD_DTYPE_F32, "c", true}};
    group.startAllReduce(7, device);
    EXPECT_TRUE(group.inFlight(7));
    EXPECT_EQ(group.finishAllReduce(7), 3u);
    ASSERT_EQ(recorder.calls.size(), 3u);
    EXPECT_EQ(recorder.calls[0], std::make_pair(static_cast<void *>(a), size_t(3)));
    EXPECT_EQ(recorder.calls[1], std::make_pair(static_cast<void *>(b), size_t(5)));
    EXPECT_EQ(recorder.calls[2], std::make_pair(static_cast<void *>(c), size_t(2)));
    EXPECT_EQ(a[0], 4);
    EXPECT_EQ(b[4], 32);
    EXPECT_EQ(c[0], 36);
  }
  pd_transport_destroy(transport);
}

} // namespace
