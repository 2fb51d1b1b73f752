//===- LinkMeasure.h - pipedream-run --measure-link ------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The link between two ranks as the partitioner models it (seconds per
// message plus bytes over a bandwidth, added to a stage's time; docs/Pipe.md
// "Costs"), measured on the transport a pipeline would use: ranks 0 and 1
// exchange messages of 1 KiB to 4 MiB through pd_transport_send/recv. Per
// size, what a message costs a pipeline is the larger of
// - its one-way time: half the median round trip of a ping-pong (a rank
//   waiting for the message), and
// - the CPU time its send and its receive take when the receiver was busy
//   while it travelled (a rank computing meanwhile, as in 1F1B's steady
//   state): the median send call plus the median receive call, 8 messages
//   from distinct buffers per round. Inside a pipeline this is what a
//   message costs: over Open MPI's shared memory a 64 KiB message's send
//   and receive took 50-56 us each, its idle one-way time 13 us.
// A line fitted through those costs (least relative squares) gives the
// latency and bandwidth. Rank 0 writes them as a pipedream profile with no
// ops, which `pipedream-compile --cost-model FILE` reads.
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

/// One message size: its one-way time, the CPU time of its send plus its
/// receive (seconds), and the cost fitted: the larger of the two.
struct LinkSample {
  size_t bytes = 0;
  double oneWay = 0, cpu = 0;
  double seconds() const { return oneWay > cpu ? oneWay : cpu; }
};

/// A measured link.
struct LinkFit {
  double latency = 0;   ///< Seconds per message.
  double bandwidth = 0; ///< Bytes per second.
  std::vector<LinkSample> samples;
};

/// The line through the samples' costs (at least two sizes): least squares
/// of the relative error, so that small messages count as much as large ones; a
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
