//===- LinkMeasure.cpp - pipedream-run --measure-link --------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "LinkMeasure.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace pipedream {
namespace tooling {

namespace {

/// Messages of 1 KiB to 4 MiB, each size 4x the last.
std::vector<size_t> messageSizes() {
  std::vector<size_t> sizes;
  for (size_t bytes = 1024; bytes <= (size_t(4) << 20); bytes *= 4)
    sizes.push_back(bytes);
  return sizes;
}

/// Round trips per size after kWarmup: enough for a stable median, few
/// enough that 4 MiB stays well under a second on a loaded machine.
constexpr int kWarmup = 3, kRoundTrips = 31;

/// A tag of the measurement's own (pipelines use tags from 0 up).
constexpr int64_t kLinkTag = 0x4c494e4b;

/// Busy-receiver rounds per size, each of kBurst messages.
constexpr int kBusyRounds = 5, kBurst = 8;

/// The median of `values` (not empty; reordered).
double median(std::vector<double> &values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2,
                   values.end());
  return values[values.size() / 2];
}

/// Keeps this thread's CPU busy for `seconds` without entering the
/// transport (a rank computing).
void busyFor(double seconds) {
  auto end =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  volatile double x = 1;
  while (std::chrono::steady_clock::now() < end)
    for (int i = 0; i < 1000; ++i)
      x = x * 1.0000001;
}

} // namespace

LinkFit fitLink(const std::vector<LinkSample> &samples) {
  LinkFit fit;
  fit.samples = samples;
  // Minimize sum ((a + b x - t) / t)^2: weights 1 / t^2.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const LinkSample &s : samples) {
    double t = s.seconds();
    if (!(t > 0))
      continue;
    double w = 1 / (t * t), x = double(s.bytes);
    sw += w;
    sx += w * x;
    sy += w * t;
    sxx += w * x * x;
    sxy += w * x * t;
  }
  double det = sw * sxx - sx * sx;
  double slope = det > 0 ? (sw * sxy - sx * sy) / det : 0;
  double intercept = sw > 0 ? (sy - slope * sx) / sw : 0;
  const LinkSample *largest = nullptr;
  for (const LinkSample &s : samples)
    if (s.seconds() > 0 && (!largest || s.bytes > largest->bytes))
      largest = &s;
  if (!(slope > 0) && largest) {
    slope = largest->seconds() / double(largest->bytes);
    intercept = 0;
  }
  fit.latency = std::max(0.0, intercept);
  fit.bandwidth = slope > 0 ? 1 / slope : 0;
  return fit;
}

std::string measureLinkOnRank(pd_transport *transport, size_t rank,
                              LinkFit &fit) {
  if (pd_transport_size(transport) < 2)
    return "--measure-link needs two ranks (--ranks 2, or the threads "
           "transport's default of 2)";
  if (rank > 1)
    return "";
  const size_t maxBytes = size_t(4) << 20;
  // kBurst distinct buffers (a round's messages do not share cache lines).
  std::vector<unsigned char> buffers(maxBytes * kBurst, 1);
  unsigned char *buffer = buffers.data();
  std::vector<LinkSample> samples;
  size_t peer = 1 - rank;
  // One send (`sending`) or receive of `bytes` at `data`; false on error,
  // with `error` set.
  std::string error;
  auto transfer = [&](bool sending, void *data, size_t bytes) {
    pd_status status =
        sending ? pd_transport_send(transport, peer, kLinkTag, data, bytes)
                : pd_transport_recv(transport, peer, kLinkTag, data, bytes);
    if (status != PD_OK)
      error = std::string("--measure-link: ") +
              (sending ? "send" : "receive") + " of " +
              std::to_string(bytes) + " bytes: " + pd_last_error();
    return status == PD_OK;
  };
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point from) {
    return std::chrono::duration<double>(Clock::now() - from).count();
  };
  for (size_t bytes : messageSizes()) {
    LinkSample sample;
    sample.bytes = bytes;
    // Ping-pong: the one-way time.
    std::vector<double> roundTrips;
    for (int i = 0; i < kWarmup + kRoundTrips; ++i) {
      auto start = Clock::now();
      // Rank 0 sends then receives, rank 1 the other way round.
      if (!transfer(rank == 0, buffer, bytes) ||
          !transfer(rank != 0, buffer, bytes))
        return error;
      if (i >= kWarmup)
        roundTrips.push_back(seconds(start));
    }
    sample.oneWay = median(roundTrips) / 2;
    // Busy receiver: rank 0 sends a burst, rank 1 computes until it has
    // surely arrived (ten one-way times each, at least 1 ms), then receives
    // it; rank 1's acknowledgement carries its median receive at the end.
    std::vector<double> calls;
    double busy = std::max(1e-3, 10 * kBurst * sample.oneWay);
    for (int round = 0; round < kBusyRounds; ++round) {
      if (rank == 1)
        busyFor(busy);
      for (int m = 0; m < kBurst; ++m) {
        unsigned char *data = buffer + size_t(m) * maxBytes;
        auto start = Clock::now();
        if (!transfer(rank == 0, data, bytes))
          return error;
        calls.push_back(seconds(start));
      }
      double ack = round + 1 == kBusyRounds && rank == 1 ? median(calls) : 0;
      if (!transfer(rank == 1, &ack, sizeof(ack)))
        return error;
      if (rank == 0 && round + 1 == kBusyRounds)
        sample.cpu = median(calls) + ack;
    }
    samples.push_back(sample);
  }
  if (rank == 0)
    fit = fitLink(samples);
  return "";
}

std::string linkProfileJson(const LinkFit &fit, const std::string &transport,
                            size_t ranks) {
  nlohmann::json samples = nlohmann::json::array();
  for (const LinkSample &s : fit.samples)
    samples.push_back({{"bytes", s.bytes},
                       {"one_way", s.oneWay},
                       {"send_receive_cpu", s.cpu},
                       {"seconds", s.seconds()}});
  nlohmann::json root = {{"format", "pipedream-profile"},
                         {"version", 1},
                         {"device", "cpu"},
                         {"ops", nlohmann::json::array()},
                         {"link",
                          {{"latency", fit.latency},
                           {"bandwidth", fit.bandwidth},
                           {"transport", transport},
                           {"ranks", ranks},
                           {"messages", samples}}}};
  return root.dump(2) + "\n";
}

} // namespace tooling
} // namespace pipedream
