//===- PartitionSolver.cpp - pipeline stage partitioning ------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/PartitionSolver.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

using namespace pipedream::pipe;
using namespace pipedream::pipe::partition;

static constexpr double kInf = std::numeric_limits<double>::infinity();

std::string Graph::validate() const {
  int64_t n = nodes.size();
  for (size_t v = 0; v < values.size(); ++v) {
    const Value &value = values[v];
    if (value.producer < 0 || value.producer >= n)
      return "value " + std::to_string(v) + ": producer out of range";
    int64_t last = value.producer;
    for (int64_t user : value.users) {
      if (user <= last || user >= n)
        return "value " + std::to_string(v) +
               ": users must be ascending, after the producer and in range";
      last = user;
    }
  }
  for (size_t v = 0; v < inputs.size(); ++v)
    for (size_t u = 0; u < inputs[v].users.size(); ++u)
      if (inputs[v].users[u] < 0 || inputs[v].users[u] >= n ||
          (u > 0 && inputs[v].users[u] <= inputs[v].users[u - 1]))
        return "input " + std::to_string(v) +
               ": users must be ascending and in range";
  for (size_t w = 0; w < sharedWeights.size(); ++w) {
    const std::vector<int64_t> &readers = sharedWeights[w].readers;
    bool ok = readers.size() >= 2 && sharedWeights[w].bytes >= 0;
    for (size_t i = 0; ok && i < readers.size(); ++i)
      ok = readers[i] >= 0 && readers[i] < n &&
           (i == 0 || readers[i] > readers[i - 1]);
    if (!ok)
      return "shared weight " + std::to_string(w) +
             ": two or more readers, ascending and in range";
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Evaluator
//===----------------------------------------------------------------------===//

Evaluator::Evaluator(const Graph &graph, const Options &options)
    : graph(graph), options(options) {
  int64_t n = graph.nodes.size();
  prefixCompute.assign(n + 1, 0);
  prefixForward.assign(n + 1, 0);
  prefixInput.assign(n + 1, 0);
  prefixWeight.assign(n + 1, 0);
  prefixParams.assign(n + 1, 0);
  prefixFrozen.assign(n + 1, 0);
  prefixActivations.assign(n + 1, 0);
  for (int64_t i = 0; i < n; ++i) {
    const Node &node = graph.nodes[i];
    prefixCompute[i + 1] = prefixCompute[i] + node.compute();
    prefixForward[i + 1] = prefixForward[i] + node.forward;
    prefixInput[i + 1] = prefixInput[i] + node.backwardInput;
    prefixWeight[i + 1] = prefixWeight[i] + node.backwardWeight;
    prefixParams[i + 1] = prefixParams[i] + node.parameterBytes;
    prefixFrozen[i + 1] = prefixFrozen[i] + node.frozenBytes;
    prefixActivations[i + 1] = prefixActivations[i] + node.activationBytes;
  }

  // What the schedule keeps in flight, from the simulator (unit costs: the
  // counts do not depend on durations for these schedules).
  int64_t k = std::max<int64_t>(options.numStages, 1);
  int64_t v = std::max<int64_t>(options.numChunks, 1);
  int64_t pieces = k * v;
  inFlight_.assign(pieces, 1);
  versions_.assign(pieces, 1);
  weightGradsDue_.assign(pieces, 0);
  schedule::Config config{options.kind, k, options.numMicrobatches, v};
  error = schedule::validate(config);
  if (!error.empty())
    return;
  schedule::SimResult sim = schedule::simulate(
      schedule::buildSchedule(config), schedule::Costs::unit(config));
  if (!sim.ok()) {
    error = "schedule simulation failed: " + sim.error;
    return;
  }
  for (int64_t p = 0; p < pieces; ++p) {
    int64_t slots = sim.peakActivationSlots[config.rankOf(p)];
    inFlight_[p] = std::max<int64_t>(1, (slots + v - 1) / v);
    versions_[p] = std::max<int64_t>(1, sim.peakWeightVersions[p]);
    weightGradsDue_[p] =
        (sim.peakWeightGradSlots[config.rankOf(p)] + v - 1) / v;
  }
}

int64_t Evaluator::pieceMemoryLimit() const {
  if (options.memoryLimit <= 0)
    return 0;
  return options.memoryLimit / std::max<int64_t>(options.numChunks, 1);
}

int64_t Evaluator::memory(int64_t piece, int64_t parameterBytes,
                          int64_t frozenBytes, int64_t activationBytes) const {
  return parameterBytes *
             (versions_[piece] + 1 + std::max<int64_t>(options.optimizerStates, 0)) +
         frozenBytes + activationBytes * inFlight_[piece];
}

int64_t Evaluator::recomputeMemory(int64_t piece, int64_t parameterBytes,
                                   int64_t frozenBytes,
                                   int64_t activationBytes,
                                   int64_t inputBytes) const {
  return memory(piece, parameterBytes, frozenBytes, inputBytes) +
         activationBytes * std::max<int64_t>(1, weightGradsDue_[piece]);
}

bool Evaluator::recomputes(int64_t memoryWithout, int64_t memoryWith) const {
  switch (options.recompute) {
  case Recompute::None:
    return false;
  case Recompute::Full:
    return true;
  case Recompute::Auto: {
    int64_t limit = pieceMemoryLimit();
    return limit > 0 && memoryWithout > limit && memoryWith < memoryWithout;
  }
  }
  return false;
}

int64_t Evaluator::inputBytes(int64_t begin, int64_t end) const {
  auto readsInside = [&](const Value &value) {
    auto first = std::lower_bound(value.users.begin(), value.users.end(), begin);
    return first != value.users.end() && *first < end;
  };
  int64_t bytes = 0;
  for (const Value &value : graph.values)
    if (value.producer < begin && readsInside(value))
      bytes += value.bytes;
  for (const Value &input : graph.inputs)
    if (readsInside(input))
      bytes += input.bytes;
  return bytes;
}

double Evaluator::commTime(int64_t bytes, int64_t messages) const {
  if (options.linkBandwidth <= 0)
    return 0;
  return bytes / options.linkBandwidth + messages * options.linkLatency;
}

void Evaluator::sharedWeights(int64_t begin, int64_t end, int64_t &copyBytes,
                              int64_t &allReduceBytes) const {
  copyBytes = allReduceBytes = 0;
  for (const SharedWeight &w : graph.sharedWeights) {
    auto first = std::lower_bound(w.readers.begin(), w.readers.end(), begin);
    bool holds = first != w.readers.end() && *first < end;
    if (!holds)
      continue;
    if (w.readers.front() < begin)
      copyBytes += w.bytes;
    if (w.readers.front() < begin || w.readers.back() >= end)
      allReduceBytes += w.bytes;
  }
}

double Evaluator::allReduceTime(int64_t bytes) const {
  if (bytes == 0 || options.linkBandwidth <= 0)
    return 0;
  // Updates per micro-batch: one per step for synchronous schedules, one
  // per micro-batch for PipeDream, one per window of K for 2BW.
  double perMicrobatch =
      options.kind == schedule::Kind::PipeDream ? 1.0
      : options.kind == schedule::Kind::TwoBW
          ? 1.0 / std::max<int64_t>(options.numStages, 1)
          : 1.0 / std::max<int64_t>(options.numMicrobatches, 1);
  return perMicrobatch * commTime(bytes, 2);
}

Piece Evaluator::evaluate(int64_t piece, int64_t begin, int64_t end) const {
  Piece out;
  out.begin = begin;
  out.end = end;
  out.forward = prefixForward[end] - prefixForward[begin];
  out.backwardInput = prefixInput[end] - prefixInput[begin];
  out.backwardWeight = prefixWeight[end] - prefixWeight[begin];
  for (const Value &value : graph.values) {
    if (value.users.empty())
      continue;
    int64_t last = value.users.back();
    if (value.producer >= begin && value.producer < end && last >= end) {
      out.sendBytes += value.bytes;
      ++out.numMessages;
    } else if (value.producer < begin && value.hasGradient && last >= begin) {
      auto first =
          std::lower_bound(value.users.begin(), value.users.end(), begin);
      if (first != value.users.end() && *first < end) {
        out.gradientBytes += value.bytes;
        ++out.numMessages;
      }
    }
  }
  // A program input lives on the piece of its first reader, which sends it
  // to the later pieces that read it (once per micro-batch, like a value:
  // pipe-unroll-schedule's input transfers).
  for (const Value &input : graph.inputs) {
    if (input.users.empty())
      continue;
    if (input.users.front() >= begin && input.users.front() < end &&
        input.users.back() >= end) {
      out.sendBytes += input.bytes;
      ++out.numMessages;
    }
  }
  sharedWeights(begin, end, out.sharedCopyBytes, out.allReduceBytes);
  out.comm = commTime(out.sendBytes + out.gradientBytes, out.numMessages) +
             allReduceTime(out.allReduceBytes);
  out.time = out.compute() + out.comm;
  out.parameterBytes =
      prefixParams[end] - prefixParams[begin] + out.sharedCopyBytes;
  out.frozenBytes = prefixFrozen[end] - prefixFrozen[begin];
  out.activationBytes = prefixActivations[end] - prefixActivations[begin];
  out.inFlight = inFlight_[piece];
  out.weightVersions = versions_[piece];
  out.memory = memory(piece, out.parameterBytes, out.frozenBytes,
                      out.activationBytes);
  out.stashBytes = out.activationBytes;
  if (options.recompute != Recompute::None) {
    out.inputBytes = inputBytes(begin, end);
    int64_t with = recomputeMemory(piece, out.parameterBytes, out.frozenBytes,
                                   out.activationBytes, out.inputBytes);
    if (recomputes(out.memory, with)) {
      out.recompute = true;
      out.memory = with;
      out.stashBytes = out.inputBytes;
      out.time += out.forward;
    }
  }
  return out;
}

Result Evaluator::evaluate(const std::vector<int64_t> &cuts) const {
  Result result;
  result.cuts = cuts;
  int64_t pieces = static_cast<int64_t>(cuts.size()) - 1;
  int64_t limit = pieceMemoryLimit();
  for (int64_t p = 0; p < pieces; ++p) {
    Piece piece = evaluate(p, cuts[p], cuts[p + 1]);
    if (piece.time > result.slowest || result.slowestPiece < 0) {
      result.slowest = piece.time;
      result.slowestPiece = p;
    }
    if (limit > 0 && piece.memory > limit)
      result.fitsMemory = false;
    result.pieces.push_back(piece);
  }
  if (pieces > 0)
    result.ideal = prefixCompute.back() / pieces;
  return result;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

/// Common checks; returns "" when a partition into P pieces can exist.
static std::string checkShape(const Graph &graph, const Options &options) {
  if (options.numStages < 1 || options.numChunks < 1)
    return "stages and virtual chunks must be at least 1";
  if (std::string err = graph.validate(); !err.empty())
    return "malformed graph: " + err;
  int64_t n = graph.nodes.size();
  int64_t pieces = options.numPieces();
  if (pieces > n) {
    std::ostringstream os;
    os << pieces << " pipeline stages";
    if (options.numChunks > 1)
      os << " (" << options.numStages << " stages x " << options.numChunks
         << " chunks)";
    os << " requested but the function has only " << n
       << " ops to place; use at most " << n << " stages";
    return os.str();
  }
  return "";
}

static std::string formatBytes(int64_t bytes) {
  char text[64];
  if (bytes < 10 * 1024)
    snprintf(text, sizeof(text), "%lld B", static_cast<long long>(bytes));
  else if (bytes < 10 * (int64_t(1) << 20))
    snprintf(text, sizeof(text), "%.1f KiB", bytes / 1024.0);
  else if (bytes < 10 * (int64_t(1) << 30))
    snprintf(text, sizeof(text), "%.1f MiB", bytes / double(1 << 20));
  else
    snprintf(text, sizeof(text), "%.1f GiB", bytes / double(int64_t(1) << 30));
  return text;
}

Result partition::solve(const Graph &graph, const Options &options) {
  Result result;
  if (std::string err = checkShape(graph, options); !err.empty()) {
    result.error = err;
    return result;
  }
  Evaluator eval(graph, options);
  if (!eval.error.empty()) {
    result.error = eval.error;
    return result;
  }
  const int64_t n = graph.nodes.size();
  const int64_t pieces = options.numPieces();
  const int64_t limit = eval.pieceMemoryLimit();

  // best[p][j]: smallest bottleneck placing nodes [0, j) in pieces [0, p).
  std::vector<std::vector<double>> best(pieces + 1,
                                        std::vector<double>(n + 1, kInf));
  std::vector<std::vector<int64_t>> parent(
      pieces + 1, std::vector<int64_t>(n + 1, -1));
  best[0][0] = 0;

  // Per start i: bytes sent forward / gradients sent back and message counts
  // of the piece [i, j), for every j (difference arrays over j).
  std::vector<int64_t> send(n + 2), grad(n + 2), msgs(n + 2), recv(n + 2);
  bool recompute = options.recompute != Recompute::None;
  // Values by producer, for the sweep.
  std::vector<std::vector<int64_t>> byProducer(n);
  for (size_t v = 0; v < graph.values.size(); ++v)
    if (!graph.values[v].users.empty())
      byProducer[graph.values[v].producer].push_back(v);
  // Values live across i (producer < i <= last user), maintained as i grows.
  std::vector<int64_t> live;
  // Smallest memory seen of a single node, for the error message.
  int64_t smallestMemory = std::numeric_limits<int64_t>::max();

  for (int64_t i = 0; i < n; ++i) {
    // Live set at i: add values produced at i-1, drop those no longer read.
    if (i > 0)
      for (int64_t v : byProducer[i - 1])
        live.push_back(v);
    live.erase(std::remove_if(live.begin(), live.end(),
                              [&](int64_t v) {
                                return graph.values[v].users.back() < i;
                              }),
               live.end());
    bool anyStart = false;
    for (int64_t p = 0; p < pieces; ++p)
      anyStart |= best[p][i] < kInf;
    if (!anyStart)
      continue;

    std::fill(send.begin(), send.end(), 0);
    std::fill(grad.begin(), grad.end(), 0);
    std::fill(msgs.begin(), msgs.end(), 0);
    std::fill(recv.begin(), recv.end(), 0);
    // Produced inside [i, j) and read at or after j: for j in
    // (producer, last user].
    for (int64_t q = i; q < n; ++q)
      for (int64_t v : byProducer[q]) {
        const Value &value = graph.values[v];
        send[q + 1] += value.bytes;
        send[value.users.back() + 1] -= value.bytes;
        msgs[q + 1] += 1;
        msgs[value.users.back() + 1] -= 1;
      }
    // Program inputs whose first reader is inside [i, j) and a reader is at
    // or after j: sent like a value.
    for (const Value &input : graph.inputs) {
      if (input.users.empty() || input.users.front() < i)
        continue;
      send[input.users.front() + 1] += input.bytes;
      send[input.users.back() + 1] -= input.bytes;
      msgs[input.users.front() + 1] += 1;
      msgs[input.users.back() + 1] -= 1;
    }
    // Produced before i and read inside [i, j): the gradient goes back, for
    // every j past the first user at or after i.
    for (int64_t v : live) {
      const Value &value = graph.values[v];
      int64_t first =
          *std::lower_bound(value.users.begin(), value.users.end(), i);
      // Recomputation stashes every value the piece receives.
      recv[first + 1] += value.bytes;
      if (!value.hasGradient)
        continue;
      grad[first + 1] += value.bytes;
      msgs[first + 1] += 1;
    }
    if (recompute)
      for (const Value &input : graph.inputs) {
        auto first =
            std::lower_bound(input.users.begin(), input.users.end(), i);
        if (first != input.users.end())
          recv[*first + 1] += input.bytes;
      }
    int64_t sendBytes = 0, gradBytes = 0, messages = 0, recvBytes = 0;
    // Times of [i, j) for every j, then relax every piece count.
    std::vector<double> time(n + 1, kInf);
    std::vector<int64_t> inputs(n + 1, 0);
    std::vector<int64_t> firstOver(pieces, n + 1);
    for (int64_t j = i + 1; j <= n; ++j) {
      sendBytes += send[j];
      gradBytes += grad[j];
      messages += msgs[j];
      recvBytes += recv[j];
      inputs[j] = recvBytes;
      time[j] = eval.prefixCompute[j] - eval.prefixCompute[i] +
                eval.commTime(sendBytes + gradBytes, messages);
      if (!graph.sharedWeights.empty()) {
        int64_t copies = 0, reduced = 0;
        eval.sharedWeights(i, j, copies, reduced);
        time[j] += eval.allReduceTime(reduced);
      }
    }
    for (int64_t p = 0; p < pieces; ++p) {
      double before = best[p][i];
      if (before == kInf)
        continue;
      // Every later piece needs at least one node.
      int64_t lastEnd = n - (pieces - p - 1);
      if (p == pieces - 1 && lastEnd != n)
        continue;
      for (int64_t j = i + 1; j <= lastEnd; ++j) {
        if (p == pieces - 1 && j != n)
          continue;
        double pieceTime = time[j];
        if (limit > 0 || recompute) {
          int64_t copies = 0, reduced = 0;
          if (!graph.sharedWeights.empty())
            eval.sharedWeights(i, j, copies, reduced);
          int64_t params = eval.prefixParams[j] - eval.prefixParams[i] + copies;
          int64_t frozen = eval.prefixFrozen[j] - eval.prefixFrozen[i];
          int64_t acts = eval.prefixActivations[j] - eval.prefixActivations[i];
          int64_t mem = eval.memory(p, params, frozen, acts);
          if (recompute) {
            // The stashed inputs need not grow with j; the weights and one
            // micro-batch's activations do.
            int64_t with =
                eval.recomputeMemory(p, params, frozen, acts, inputs[j]);
            if (eval.recomputes(mem, with)) {
              mem = with;
              pieceTime += eval.prefixForward[j] - eval.prefixForward[i];
            }
            if (j == i + 1)
              smallestMemory = std::min(smallestMemory, mem);
            if (limit > 0 && mem > limit) {
              if (eval.recomputeMemory(p, params, frozen, acts, 0) > limit)
                break;
              continue;
            }
          } else {
            if (j == i + 1)
              smallestMemory = std::min(smallestMemory, mem);
            // Memory only grows with j.
            if (mem > limit)
              break;
          }
        }
        double value = std::max(before, pieceTime);
        if (value < best[p + 1][j]) {
          best[p + 1][j] = value;
          parent[p + 1][j] = i;
        }
      }
    }
  }

  if (best[pieces][n] == kInf) {
    std::ostringstream os;
    os << "no partition into " << pieces << " stages fits memory-limit="
       << options.memoryLimit << " bytes (" << formatBytes(options.memoryLimit)
       << " per rank";
    if (options.numChunks > 1)
      os << ", " << formatBytes(limit) << " per chunk";
    os << ")";
    int64_t all = eval.memory(0, eval.prefixParams[n], eval.prefixFrozen[n],
                              eval.prefixActivations[n]);
    if (smallestMemory != std::numeric_limits<int64_t>::max() &&
        smallestMemory > limit)
      os << "; a single op already needs " << formatBytes(smallestMemory);
    else
      os << "; the whole model needs " << formatBytes(all)
         << " on one stage with the first stage's in-flight micro-batches";
    os << ": raise the limit, add stages"
       << (options.recompute == Recompute::None ? ", recompute activations"
                                                : "")
       << " or use fewer micro-batches in flight";
    result.error = os.str();
    return result;
  }
  std::vector<int64_t> cuts(pieces + 1);
  cuts[pieces] = n;
  for (int64_t p = pieces, j = n; p > 0; --p) {
    j = parent[p][j];
    cuts[p - 1] = j;
  }
  return eval.evaluate(cuts);
}

Result partition::uniform(const Graph &graph, const Options &options) {
  Result result;
  if (std::string err = checkShape(graph, options); !err.empty()) {
    result.error = err;
    return result;
  }
  int64_t n = graph.nodes.size(), pieces = options.numPieces();
  std::vector<int64_t> cuts(pieces + 1, 0);
  for (int64_t p = 0; p < pieces; ++p)
    cuts[p + 1] = cuts[p] + n / pieces + (p < n % pieces ? 1 : 0);
  return evaluateCuts(graph, options, cuts);
}

Result partition::evaluateCuts(const Graph &graph, const Options &options,
                               const std::vector<int64_t> &cuts) {
  Result result;
  if (std::string err = checkShape(graph, options); !err.empty()) {
    result.error = err;
    return result;
  }
  int64_t n = graph.nodes.size(), pieces = options.numPieces();
  if (static_cast<int64_t>(cuts.size()) != pieces + 1 || cuts.front() != 0 ||
      cuts.back() != n) {
    result.error = "expected " + std::to_string(pieces + 1) +
                   " cut points from 0 to " + std::to_string(n);
    return result;
  }
  for (int64_t p = 0; p < pieces; ++p)
    if (cuts[p + 1] <= cuts[p]) {
      result.error = "stage " + std::to_string(p) + " would be empty";
      return result;
    }
  Evaluator eval(graph, options);
  if (!eval.error.empty()) {
    result.error = eval.error;
    return result;
  }
  return eval.evaluate(cuts);
}
