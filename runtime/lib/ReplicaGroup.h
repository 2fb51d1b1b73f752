//===- ReplicaGroup.h - a pipeline rank's data-parallel replicas -*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Replicated stages (docs/Bundle.md "Replicated stages"): every pipeline
// rank runs on R data-parallel replicas; before a stage's update its
// gradient accumulators are summed over the replicas. Over MPI the group is
// a communicator of MPI_Comm_split (color: the pipeline rank, key: the
// replica) and the sum MPI_Iallreduce of buckets (the accumulators packed
// into contiguous buffers of at most bucketBytes, all in flight at once);
// over other transports pd_transport_all_reduce of the same buckets.
// Internal to the runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_REPLICAGROUP_H
#define PIPEDREAM_RUNTIME_LIB_REPLICAGROUP_H

#include "Bundle.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pipedream {
namespace runtime {

/// Host memory of one accumulator to sum: `count` elements of `dtype`
/// (f32 or f64).
struct ReduceSpan {
  void *data = nullptr;
  size_t count = 0;
  pd_dtype dtype = PD_DTYPE_F32;
  std::string name;
  /// Device memory (a cuda bundle's gradient): never packed into a host
  /// bucket, summed in place by the transport's all-reduce (NCCL's
  /// ncclAllReduce on device pointers); not over MPI.
  bool device = false;
};

/// Default bucket size: 4 MiB; $PIPEDREAM_ALLREDUCE_BUCKET_BYTES overrides
/// it (a positive number of bytes; tests use small ones to get many
/// buckets).
size_t allReduceBucketBytes();

class ReplicaGroup {
public:
  /// The group of world rank `rank` (pipeline rank `pipelineRank`, replica
  /// `replica`), whose members are `members` (world ranks, ascending).
  /// Over MPI this splits the transport's communicator: every rank of the
  /// transport must create its group (a collective of all ranks).
  ReplicaGroup(pd_transport &transport, size_t pipelineRank, size_t replica,
               std::vector<size_t> members);
  ~ReplicaGroup();
  ReplicaGroup(const ReplicaGroup &) = delete;
  ReplicaGroup &operator=(const ReplicaGroup &) = delete;

  /// Sums `spans` over the group in place (every member passes the same
  /// names, counts and types in the same order). Returns the number of
  /// buckets used. Throws Error.
  size_t allReduce(const std::vector<ReduceSpan> &spans);

  /// The same in two halves, so the sum overlaps what the rank does in
  /// between (the drain): startAllReduce packs the buckets and posts them
  /// (MPI_Iallreduce), finishAllReduce waits and unpacks, returning the
  /// number of buckets. `id` names the operation (the update instruction
  /// it precedes; several may be in flight, started in the same order on
  /// every member); the spans' memory must not change in between. Over
  /// transports without nonblocking collectives the sum runs in finish.
  /// Throws Error.
  void startAllReduce(size_t id, const std::vector<ReduceSpan> &spans);
  size_t finishAllReduce(size_t id);
  /// Whether operation `id` was started and not finished.
  bool inFlight(size_t id) const;

  /// Sharded optimizer state: replica j updated the tensors
  /// `byReplica[j]`; afterwards every member holds all of them (every
  /// member passes the same list). Over MPI one MPI_Iallgatherv of the
  /// packed bytes; over other transports a pd_transport_all_reduce of
  /// buffers that are zero outside the member's own tensors (f32 and f64
  /// only; a -0.0 comes back +0.0). Throws Error.
  void allGather(size_t replica,
                 const std::vector<std::vector<ReduceSpan>> &byReplica);

  const std::vector<size_t> &members() const { return memberRanks; }

private:
  pd_transport &transport;
  std::vector<size_t> memberRanks;
  /// MPI: the split communicator (an MPI_Comm), else null.
  struct Mpi;
  std::unique_ptr<Mpi> mpi;
  /// The all-reduces by id (bucket memory kept between steps).
  struct Operation;
  std::map<size_t, std::unique_ptr<Operation>> operations;
  static constexpr size_t kBlockingOperation = ~size_t(0);
  std::string describeMembers() const;
};

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_REPLICAGROUP_H
