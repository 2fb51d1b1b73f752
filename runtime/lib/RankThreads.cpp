//===- RankThreads.cpp - every rank on a thread --------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/rank_threads.h"

#include <thread>

namespace pipedream {

std::vector<RankOutcome>
runRanksOnThreads(const std::vector<pd_transport *> &transports,
                  const std::function<RankOutcome(size_t rank)> &body) {
  std::vector<RankOutcome> outcomes(transports.size());
  std::vector<std::thread> threads;
  threads.reserve(transports.size());
  for (size_t r = 0; r < transports.size(); ++r)
    threads.emplace_back([&, r] {
      RankOutcome outcome = body(r);
      if (!outcome.error.empty() && outcome.abort)
        pd_transport_abort(transports[r], outcome.error.c_str());
      outcomes[r] = std::move(outcome);
    });
  for (std::thread &thread : threads)
    thread.join();
  return outcomes;
}

} // namespace pipedream
