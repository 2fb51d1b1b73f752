//===- Schedule.h - pipeline schedules, verifier, simulator -----*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Pipeline schedules as plain data (no MLIR): per-rank ordered lists of
// actions (F, B, W, U of one virtual stage on one micro-batch), their
// generators for every schedule kind of DESIGN.md, a verifier and a
// simulator. `pipe-unroll-schedule` and `pipe-verify-schedule` are thin MLIR
// wrappers around this library.
//
// Model
// -----
// - K ranks (physical stages), V chunks per rank, M micro-batches. Virtual
//   stage `v` (0 <= v < K*V) is chunk `v / K` of its rank. Loop placement
//   (every kind but the V-shaped ones): rank `v % K`. V placement (`zb-v`,
//   `dualpipe-v`, V = 2): stage s and 2K-1-s run on rank s, so the first and
//   the last stage share rank 0.
// - Joined actions: an action may be joined to the one before it on its
//   rank (`Action::join`): a W that completes the B right before it is
//   torch's full backward `B` of a split schedule, and a B overlapped with
//   the F before it is torch's `(F;B)OVERLAP_F_B` (DualPipe). Joined actions
//   run back to back with no communication step between them: their
//   receives are waited for before the first, their sends posted after the
//   last.
// - Implied communication: F of virtual stage v on micro-batch m sends the
//   activation to v+1; B of v sends the input gradient to v-1 (nothing when
//   both stages sit on the same rank). Sends and receives are blocking
//   rendezvous. Each rank batches its pending sends with the receives of its
//   next action into one communication step (as Megatron's
//   `send_forward_recv_backward` / `batch_isend_irecv`); a step completes
//   when every peer has the matching operations in its current step. Steps
//   that can never complete are a deadlock.
// - Deferred sends (`Config::defersSends`: interleaved-zb, zb-v,
//   dualpipe-v): torch's runtime posts a send and waits for it only later
//   (`WAIT_SEND_F`/`WAIT_SEND_B`), so a rank runs ahead of its receivers;
//   torch's orders for these kinds rely on it (under rendezvous sends their
//   warm-ups deadlock). A deferred send does not hold up its step; the rank
//   waits for all of them at the end of the step. (The compile path needs
//   no deferred sends: `pipe-project-ranks` derives each rank's messages
//   from one global order in which every send meets its receive, so the
//   per-rank programs of these orders complete under rendezvous sends,
//   which `verifyMessages` proves.)
// - Activation stash: F of (v, m) occupies one slot of its rank until the
//   backward of (v, m) has finished (B, or W when the backward is split).
// - Weight versions (asynchronous kinds): F of (v, m) uses the current weight
//   version of v and its backward must use the same one, so the version is
//   kept (stashed) while (v, m) is in flight; every U makes a new version.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULE_H
#define PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipedream {
namespace pipe {
namespace schedule {

/// Schedule kinds (same names as `#pipe.schedule`'s kind).
enum class Kind {
  GPipe,
  OneFOneB,
  Interleaved1F1B,
  PipeDream,
  TwoBW,
  ZBH1,
  ZBV,
  InterleavedZB,
  DualPipeV
};

/// Every kind, in the order of the user-facing lists.
const std::vector<Kind> &allKinds();

/// Parses a user-facing kind name (`gpipe`, `1f1b`, `interleaved-1f1b`,
/// `pipedream`, `2bw`, `zb-h1`, `zb-v`, `interleaved-zb`, `dualpipe-v`).
std::optional<Kind> parseKind(const std::string &name);
/// User-facing name of a kind.
const char *kindName(Kind kind);
/// "gpipe, 1f1b, ..., dualpipe-v": the kind names for error messages.
std::string kindNameList();

/// What one action does.
enum class Op { F, B, W, U };
/// Letter of an op.
char opLetter(Op op);

/// One cell of a schedule diagram: `op` of virtual stage `stage` on
/// micro-batch `microbatch` (for U: the micro-batch whose backward completes
/// the gradients it applies).
/// How an action joins the action before it on its rank.
enum class Join {
  None,
  /// A W completing the B of the same stage and micro-batch right before it:
  /// together they are one full backward (torch's `B` in a split schedule).
  FullBackward,
  /// A B overlapped with the F right before it (torch's
  /// `(F;B)OVERLAP_F_B`, DualPipe's overlapped forward and backward chunks).
  Overlap,
};

struct Action {
  Op op;
  int64_t stage;
  int64_t microbatch;
  Join join = Join::None;
  bool operator==(const Action &o) const {
    return op == o.op && stage == o.stage && microbatch == o.microbatch &&
           join == o.join;
  }
};
/// `1F3` style (virtual stage, op, micro-batch), as PyTorch's schedule CSV.
std::string toString(const Action &action);

/// Configuration: kind, K ranks, M micro-batches, V chunks per rank.
struct Config {
  Kind kind = Kind::OneFOneB;
  int64_t numRanks = 1;
  int64_t numMicrobatches = 1;
  int64_t numChunks = 1;

  int64_t numVirtualStages() const { return numRanks * numChunks; }
  /// V placement: stage s and 2K-1-s on rank s (zb-v, dualpipe-v).
  bool isVShaped() const {
    return kind == Kind::ZBV || kind == Kind::DualPipeV;
  }
  int64_t rankOf(int64_t stage) const {
    if (isVShaped() && stage >= numRanks)
      return 2 * numRanks - 1 - stage;
    return stage % numRanks;
  }
  /// Chunk of a stage on its rank (stage / K under both placements).
  int64_t chunkOf(int64_t stage) const { return stage / numRanks; }
  /// The stage that is chunk `chunk` of rank `rank`.
  int64_t stageOf(int64_t rank, int64_t chunk) const {
    if (isVShaped() && chunk == 1)
      return 2 * numRanks - 1 - rank;
    return chunk * numRanks + rank;
  }
  /// Sends waited for at the end of the step (torch's WAIT_SEND), not
  /// where they are posted.
  bool defersSends() const {
    return kind == Kind::ZBV || kind == Kind::InterleavedZB ||
           kind == Kind::DualPipeV;
  }
  bool splitsBackward() const {
    return kind == Kind::ZBH1 || kind == Kind::ZBV ||
           kind == Kind::InterleavedZB || kind == Kind::DualPipeV;
  }
  bool isSynchronous() const {
    return kind != Kind::PipeDream && kind != Kind::TwoBW;
  }
};

/// Returns an error message when `config` is not valid, "" otherwise:
/// K, M, V >= 1; V > 1 only for interleaved-1f1b (which also needs
/// M % K == 0: Megatron runs micro-batches in groups of K) and
/// interleaved-zb (V >= 2, M a multiple of max(1, M / K) as torch's); zb-v
/// and dualpipe-v take V = 2, dualpipe-v also M >= 2K.
std::string validate(const Config &config);

/// A schedule: each rank's actions in execution order.
struct Schedule {
  Config config;
  std::vector<std::vector<Action>> ranks;
};

/// Builds the schedule of `config`, which must be valid. Policies:
/// - gpipe: all F (micro-batch order), then all B (micro-batch order), one U.
/// - 1f1b (PipeDream-Flush): rank r runs min(K-1-r, M) warm-up F, then
///   alternates F, B, then drains the remaining B; one U at the end.
/// - interleaved-1f1b: Megatron's schedule: forward k of a rank runs chunk
///   (k / K) % V of micro-batch (k / (K*V)) * K + k % K, backwards the same
///   with chunks reversed; (K-1-r)*2 + (V-1)*K warm-up forwards (all of them
///   when M == K); one U per chunk at the end.
/// - zb-h1 (ZeroBubble's H1, the order of torch's
///   ScheduleInterleavedZeroBubble with one stage per rank): B is the input
///   gradient only, W the weight gradient. Rank r runs min(K-1-r, M) warm-up
///   F, then F B pairs, then the remaining B; the W of each backward is
///   deferred by r backwards (it follows the B r steps later; the last r W
///   drain at the end). At most K micro-batches are in flight (F done, W
///   not) on every rank: 1F1B's bound on rank 0. With F = B = W = 1 and
///   M >= K the bubble is (K-1)/(3M+K-1). One U at the end.
/// - interleaved-zb (ZB1P with V loop-placed chunks): the same with torch's
///   interleaved forward/backward chunk order in rounds of
///   M / max(1, M / K) micro-batches and (V-1) * round + K-1-r warm-up F.
/// - zb-v (ZeroBubble's ZB-V, torch's ScheduleZBVZeroBubble): V placement;
///   rank r runs 2(K-r)-1 F of its first chunk, r pairs F1 F0, K-r triples
///   F1 B1 W1, then F0 B0 W0 F1 B1 W1 rounds, then drains.
/// - dualpipe-v (DeepSeek's DualPipeV, torch's ScheduleDualPipeV): V
///   placement, steady state of overlapped F/B pairs of the two chunks
///   (Join::Overlap) with full backwards (Join::FullBackward), zero-bubble
///   split backwards in warm-up and drain.
/// - pipedream: 1F1B's order without a flush; a U right after every B.
/// - 2bw (PipeDream-2BW): 1F1B's order; gradients are coalesced over windows
///   of K consecutive micro-batches and a U follows the B of the last
///   micro-batch of each window (m % K == K-1, or m == M-1). In-flight
///   micro-batches then use at most 2 versions (the newest and the one
///   before), the double buffer of the paper.
Schedule buildSchedule(const Config &config);

/// Durations of actions and of communication.
struct Costs {
  double forward = 1, backward = 2, weightGrad = 0, update = 0, comm = 0;
  /// Durations of one virtual stage's actions.
  struct Stage {
    double forward = 1, backward = 2, weightGrad = 0, update = 0;
  };
  /// Per virtual stage durations (index = virtual stage); when non-empty
  /// they replace the uniform ones above for the stages they cover (from a
  /// cost model or a profile: stages rarely cost the same).
  std::vector<Stage> perStage;
  /// F=1, B=2, U=0, comm=0; with a split backward B=1, W=1.
  static Costs unit(const Config &config);
  double of(Op op) const;
  /// Duration of `action`, per stage when `perStage` covers its stage.
  double of(const Action &action) const;
};

/// One executed action.
struct Slot {
  double start = 0, end = 0;
};

/// What the simulator (and the verifier) found.
struct SimResult {
  /// Empty on success; otherwise the first error, naming rank, action and
  /// micro-batch.
  std::string error;
  /// Per rank, per action index: start and end time.
  std::vector<std::vector<Slot>> timeline;
  double makespan = 0;
  /// Idle time over all ranks / (K * makespan).
  double bubbleFraction = 0;
  /// Per rank: most micro-batches (stage, micro-batch pairs) in flight.
  std::vector<int64_t> peakActivationSlots;
  /// Per rank: most micro-batches whose B ran and whose W has not (0 for
  /// kinds that do not split the backward): what a split backward holds
  /// for the weight gradients alone.
  std::vector<int64_t> peakWeightGradSlots;
  /// Per virtual stage: most weight versions alive at once (1 for the
  /// synchronous kinds).
  std::vector<int64_t> peakWeightVersions;
  bool ok() const { return error.empty(); }
};

/// Static activation slot assignment: for each rank and action index, the
/// slot an F writes (and its B/W reads), -1 for other actions.
using SlotAssignment = std::vector<std::vector<int64_t>>;

/// Assigns each F the lowest free slot of its rank, freed after the
/// backward (B, or W when split). The slot count per rank is the peak.
SlotAssignment assignSlots(const Schedule &schedule);

/// Simulates `schedule` with `costs` under blocking rendezvous
/// communication. Reports deadlock in `error` (and stops).
SimResult simulate(const Schedule &schedule, const Costs &costs);

/// Verifies `schedule`: every action on its rank and in range, each
/// expected action exactly once (F and B of every stage and micro-batch; W
/// iff split; U per the kind's policy), B after its F, W after its B, U
/// after the backwards it applies (and, synchronous, after all of them),
/// no deadlock, slots (when given) never reused while live, and weight
/// versions within the kind's bound (pipedream: K-r on rank r, 2bw: 2,
/// synchronous: 1). Returns "" or the first error.
std::string verify(const Schedule &schedule,
                   const SlotAssignment *slots = nullptr);

/// One error found, with the action it is about (for MLIR diagnostics).
struct Diagnostic {
  std::string message;
  int64_t rank = -1;
  int64_t index = -1; ///< action index in the rank, -1 if none.
};
/// As `verify`, but says which action the error is about.
Diagnostic verifyWithLocation(const Schedule &schedule,
                              const SlotAssignment *slots = nullptr);

} // namespace schedule
} // namespace pipe
} // namespace pipedream

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_SCHEDULE_H
