//===- LinkMeasure.h - pipedream-run --measure-link ------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The link between two ranks as the partitioner models it (seconds per
// message plus bytes over a bandwidth, docs/Pipe.md "Costs"), measured on
// the transport a pipeline would use: ranks 0 and 1 bounce messages of
// 1 KiB to 4 MiB back and forth through pd_transport_send/recv, the one-way
// time of a size is half the median round trip, and a line fitted through
// those times (least relative squares) gives the latency and bandwidth.
// Rank 0 writes them as a pipedream profile with no ops, which
// `pipedream-compile --cost-model FILE` reads.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TOOLING_LINK_MEASURE_H
#define PIPEDREAM_TOOLING_LINK_MEASURE_H

#include "Options.h"

#include "pipedream/runtime.h"

#include <cstddef>
#include <string>
#include <vector>

namespace pipedream {
namespace tooling {

/// One message size and its measured one-way time.
struct LinkSample {
  size_t bytes = 0;
  double seconds = 0;
};

/// A measured link.
struct LinkFit {
  double latency = 0;   ///< Seconds per message.
  double bandwidth = 0; ///< Bytes per second.
  std::vector<LinkSample> samples;
};

/// The line through `samples` (at least two sizes): least squares of the
/// relative error, so that small messages count as much as large ones; a
/// negative latency is clamped to 0, a non-positive slope takes the largest
/// message's bytes over its time.
LinkFit fitLink(const std::vector<LinkSample> &samples);

/// The ping-pong on rank `rank` of `transport` (ranks past 1 take no
/// part). Fills `fit` on rank 0; returns an error message or "".
std::string measureLinkOnRank(pd_transport *transport, size_t rank,
                              LinkFit &fit);

/// The profile JSON of a measured link (`"ops": []`, `"link"`, the samples).
std::string linkProfileJson(const LinkFit &fit, const std::string &transport,
                            size_t ranks);

} // namespace tooling
} // namespace pipedream

#endif // PIPEDREAM_TOOLING_LINK_MEASURE_H
