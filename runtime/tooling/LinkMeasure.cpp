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

} // namespace

LinkFit fitLink(const std::vector<LinkSample> &samples) {
  LinkFit fit;
  fit.samples = samples;
  // Minimize sum ((a + b x - t) / t)^2: weights 1 / t^2.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const LinkSample &s : samples) {
    if (!(s.seconds > 0))
      continue;
    double w = 1 / (s.seconds * s.seconds), x = double(s.bytes);
    sw += w;
    sx += w * x;
    sy += w * s.seconds;
    sxx += w * x * x;
    sxy += w * x * s.seconds;
  }
  double det = sw * sxx - sx * sx;
  double slope = det > 0 ? (sw * sxy - sx * sy) / det : 0;
  double intercept = sw > 0 ? (sy - slope * sx) / sw : 0;
  const LinkSample *largest = nullptr;
  for (const LinkSample &s : samples)
    if (s.seconds > 0 && (!largest || s.bytes > largest->bytes))
      largest = &s;
  if (!(slope > 0) && largest) {
    slope = largest->seconds / double(largest->bytes);
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
  std::vector<unsigned char> buffer(size_t(4) << 20, 0);
  std::vector<LinkSample> samples;
  size_t peer = 1 - rank;
  auto fail = [&](const char *what, size_t bytes) {
    return std::string("--measure-link: ") + what + " of " +
           std::to_string(bytes) + " bytes: " + pd_last_error();
  };
  for (size_t bytes : messageSizes()) {
    std::vector<double> roundTrips;
    for (int i = 0; i < kWarmup + kRoundTrips; ++i) {
      auto start = std::chrono::steady_clock::now();
      if (rank == 0) {
        if (pd_transport_send(transport, peer, kLinkTag, buffer.data(),
                              bytes) != PD_OK)
          return fail("send", bytes);
        if (pd_transport_recv(transport, peer, kLinkTag, buffer.data(),
                              bytes) != PD_OK)
          return fail("receive", bytes);
      } else {
        if (pd_transport_recv(transport, peer, kLinkTag, buffer.data(),
                              bytes) != PD_OK)
          return fail("receive", bytes);
        if (pd_transport_send(transport, peer, kLinkTag, buffer.data(),
                              bytes) != PD_OK)
          return fail("send", bytes);
      }
      std::chrono::duration<double> took =
          std::chrono::steady_clock::now() - start;
      if (i >= kWarmup)
        roundTrips.push_back(took.count());
    }
    std::nth_element(roundTrips.begin(),
                     roundTrips.begin() + roundTrips.size() / 2,
                     roundTrips.end());
    samples.push_back({bytes, roundTrips[roundTrips.size() / 2] / 2});
  }
  if (rank == 0)
    fit = fitLink(samples);
  return "";
}

std::string linkProfileJson(const LinkFit &fit, const std::string &transport,
                            size_t ranks) {
  nlohmann::json samples = nlohmann::json::array();
  for (const LinkSample &s : fit.samples)
    samples.push_back({{"bytes", s.bytes}, {"seconds", s.seconds}});
  nlohmann::json root = {{"format", "pipedream-profile"},
                         {"version", 1},
                         {"device", "cpu"},
                         {"ops", nlohmann::json::array()},
                         {"link",
                          {{"latency", fit.latency},
                           {"bandwidth", fit.bandwidth},
                           {"transport", transport},
                           {"ranks", ranks},
                           {"one_way", samples}}}};
  return root.dump(2) + "\n";
}

} // namespace tooling
} // namespace pipedream
