//===- PartitionSolver.h - pipeline stage partitioning ----------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// PipeDream's partitioning dynamic program on an op-level DAG, as plain data
// (no MLIR), so that the property tests can compare it with brute force.
// `pipe-partition` extracts a `Graph` from a function and writes the result
// back as `#pipe.stage` attributes.
//
// Model
// -----
// - The nodes are the ops of the function in a topological order (every
//   edge goes from a lower to a higher index); the order is the function's
//   body order, i.e. the ONNX graph's node order. A partition into P pieces
//   (P = K stages x V chunks) is P - 1 cut points on that order: piece p
//   holds nodes [cut[p], cut[p+1]). Every prefix of a topological order is a
//   downward-closed set, so every cut is a valid antichain: all edges cross
//   it forward. The dynamic program is exact over these cuts (the property
//   test enumerates them all); cuts that are not prefixes of this order are
//   not searched.
// - Piece p runs on rank p % K as chunk p / K (Megatron's round-robin
//   dealing, `StageAttr::getVirtualIndex`).
// - Time of a piece: forward + backward-input + backward-weight time of its
//   nodes, plus the time to send what it produces for later pieces (the
//   activation, each value once) and the gradients of what it received
//   from earlier pieces (float values only), at `linkBandwidth` with
//   `linkLatency` per message. Nothing is assumed to overlap.
// - Memory of a piece (bytes): trainable parameters x (weight versions +
//   one gradient + `optimizerStates`), plus frozen parameters, plus the
//   activations it keeps for backward x the micro-batches in flight on its
//   rank. Versions and in-flight counts come from the schedule simulator
//   (1F1B: rank r keeps K - r micro-batches; GPipe: M; PipeDream: K - r
//   weight versions); with V chunks a rank's in-flight count is shared
//   evenly by its chunks and each chunk gets `memoryLimit / V`.
// - Objective: the slowest piece's time (PipeDream's bottleneck), under the
//   memory limit of every piece.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PARTITIONSOLVER_H
#define PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PARTITIONSOLVER_H

#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pipedream {
namespace pipe {
namespace partition {

/// Costs of one op (one node of the graph).
struct Node {
  /// Seconds.
  double forward = 0, backwardInput = 0, backwardWeight = 0;
  /// Trainable and frozen parameter bytes the op owns (each weight counted
  /// at its first reader), activation bytes its backward keeps.
  int64_t parameterBytes = 0, frozenBytes = 0, activationBytes = 0;
  double compute() const { return forward + backwardInput + backwardWeight; }
};

/// A value some node produces and later nodes read.
struct Value {
  int64_t producer = 0;
  /// Reading nodes, ascending, all > producer. A value the function
  /// returns counts as read by the last node (the loss joins the last
  /// stage).
  std::vector<int64_t> users;
  int64_t bytes = 0;
  /// Float values: their gradient is sent back when they cross a cut.
  bool hasGradient = true;
};

/// A trainable weight read by two or more nodes (tied weights). Its bytes
/// are in the first reader's `parameterBytes`; a piece with a later reader
/// but not the first holds a copy too, and every piece holding it while
/// another does takes part in the gradient all-reduce (docs/Pipe.md,
/// "Shared weights").
struct SharedWeight {
  /// Reading nodes, ascending, at least two.
  std::vector<int64_t> readers;
  int64_t bytes = 0;
};

/// Nodes in topological order and the values between them.
struct Graph {
  std::vector<Node> nodes;
  std::vector<Value> values;
  /// The function's non-weight arguments (data, labels): `users` and
  /// `bytes` as for a value, `producer` unused. What a recomputing stage
  /// stashes of them.
  std::vector<Value> inputs;
  std::vector<SharedWeight> sharedWeights;
  /// Returns "" or why the graph is malformed (a user not after its
  /// producer, an index out of range, unsorted users).
  std::string validate() const;
};

/// What the partition optimises for.
/// Activation recomputation (docs/Pipe.md, "Activation recomputation"): a
/// recomputing piece stashes its inputs (the values it receives, the
/// function arguments it reads) instead of its activations and runs its
/// forward again before its backward.
enum class Recompute {
  None,
  Full, ///< every piece
  Auto  ///< exactly the pieces whose memory exceeds the limit without it
};

struct Options {
  int64_t numStages = 1; ///< K (ranks).
  int64_t numChunks = 1; ///< V (virtual chunks per rank).
  schedule::Kind kind = schedule::Kind::OneFOneB;
  int64_t numMicrobatches = 1;
  /// Bytes per second between two ranks; 0 means communication is free.
  double linkBandwidth = 0;
  /// Seconds per message.
  double linkLatency = 0;
  /// Bytes per rank; 0 means unlimited.
  int64_t memoryLimit = 0;
  /// Extra copies of every trainable weight (0 for SGD, 1 momentum, 2 Adam).
  int64_t optimizerStates = 0;
  Recompute recompute = Recompute::None;

  int64_t numPieces() const { return numStages * numChunks; }
};

/// Evaluated piece.
struct Piece {
  int64_t begin = 0, end = 0; ///< Node range [begin, end).
  double forward = 0, backwardInput = 0, backwardWeight = 0;
  /// Bytes sent forward (activations) and backward (gradients of inputs).
  int64_t sendBytes = 0, gradientBytes = 0;
  int64_t numMessages = 0;
  double comm = 0;
  double time = 0; ///< compute + comm.
  int64_t parameterBytes = 0, frozenBytes = 0, activationBytes = 0;
  /// Recomputation: whether this piece recomputes, the bytes of its inputs
  /// (what it stashes then), and the bytes stashed per micro-batch in
  /// flight (`activationBytes`, or `inputBytes` when it recomputes; the
  /// activations of one micro-batch are then rebuilt in its backward and
  /// counted once in `memory`).
  bool recompute = false;
  int64_t inputBytes = 0, stashBytes = 0;
  int64_t inFlight = 0, weightVersions = 0;
  int64_t memory = 0;
  /// Shared weights: bytes of the copies this piece holds of weights whose
  /// first reader is in an earlier piece (in parameterBytes), and bytes it
  /// all-reduces per update with the other holders (its part of `comm`,
  /// spread over the micro-batches of an update).
  int64_t sharedCopyBytes = 0, allReduceBytes = 0;
  double compute() const { return forward + backwardInput + backwardWeight; }
};

/// A partition and what it costs.
struct Result {
  /// Empty on success, else why no partition exists.
  std::string error;
  /// P + 1 cut points: piece p is nodes [cuts[p], cuts[p+1]).
  std::vector<int64_t> cuts;
  std::vector<Piece> pieces;
  double slowest = 0; ///< Largest piece time.
  int64_t slowestPiece = -1;
  /// Total compute / P: the slowest piece of a perfect split without
  /// communication.
  double ideal = 0;
  bool fitsMemory = true;
  bool ok() const { return error.empty(); }
};

/// Precomputed schedule facts and prefix sums; builds in O(nodes + values).
class Evaluator {
public:
  Evaluator(const Graph &graph, const Options &options);

  /// Piece `piece` (virtual index) holding nodes [begin, end).
  Piece evaluate(int64_t piece, int64_t begin, int64_t end) const;
  /// Evaluates the partition given by `cuts` (P + 1 points, from 0 to n).
  Result evaluate(const std::vector<int64_t> &cuts) const;
  /// Memory budget of one piece (0: unlimited).
  int64_t pieceMemoryLimit() const;
  int64_t inFlight(int64_t piece) const { return inFlight_[piece]; }
  int64_t weightVersions(int64_t piece) const { return versions_[piece]; }
  /// Most micro-batches whose B ran and whose W has not (split backward).
  int64_t weightGradsDue(int64_t piece) const { return weightGradsDue_[piece]; }
  /// Memory of a piece from its sums (the dynamic program's inner loop).
  int64_t memory(int64_t piece, int64_t parameterBytes, int64_t frozenBytes,
                 int64_t activationBytes) const;
  /// The same when the piece recomputes: `inputBytes` per micro-batch in
  /// flight and the activations of one, which B rebuilds; when the kind
  /// splits the backward, of every micro-batch whose W is due (B hands W
  /// what it reads of them: at most all).
  int64_t recomputeMemory(int64_t piece, int64_t parameterBytes,
                          int64_t frozenBytes, int64_t activationBytes,
                          int64_t inputBytes) const;
  /// Whether a piece recomputes under options.recompute, from its memory
  /// with and without (Auto: only when it exceeds the limit without and
  /// recomputing saves memory).
  bool recomputes(int64_t memoryWithout, int64_t memoryWith) const;
  /// Bytes of the values produced before `begin` and of the inputs that
  /// nodes in [begin, end) read.
  int64_t inputBytes(int64_t begin, int64_t end) const;
  double commTime(int64_t bytes, int64_t messages) const;
  /// Shared weights of the piece [begin, end): the bytes of copies it holds
  /// beyond the first readers', and the bytes it all-reduces per update.
  void sharedWeights(int64_t begin, int64_t end, int64_t &copyBytes,
                     int64_t &allReduceBytes) const;
  /// Seconds per micro-batch of all-reducing `bytes` once per update (a
  /// ring all-reduce of two holders sends and receives the bytes once: one
  /// send and one receive of half of them, twice).
  double allReduceTime(int64_t bytes) const;

  const Graph &graph;
  const Options &options;
  /// Non-empty when the options are not a valid schedule configuration.
  std::string error;
  std::vector<double> prefixCompute, prefixForward, prefixInput, prefixWeight;
  std::vector<int64_t> prefixParams, prefixFrozen, prefixActivations;

private:
  std::vector<int64_t> inFlight_, versions_, weightGradsDue_;
};

/// PipeDream's dynamic program over the cut points: minimises the slowest
/// piece under the memory limit. O(n^2 P + n (n + values)) time, O(n P)
/// memory. Errors: more pieces than nodes, no partition within the limit.
Result solve(const Graph &graph, const Options &options);

/// The baseline: equal node counts (the first n % P pieces get one more).
Result uniform(const Graph &graph, const Options &options);

/// Evaluates given cut points (manual `split-after`); checks that they are
/// P + 1 increasing points from 0 to n.
Result evaluateCuts(const Graph &graph, const Options &options,
                    const std::vector<int64_t> &cuts);

} // namespace partition
} // namespace pipe
} // namespace pipedream

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_PARTITIONSOLVER_H
