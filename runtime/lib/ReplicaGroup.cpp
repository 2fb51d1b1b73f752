//===- ReplicaGroup.cpp - a pipeline rank's data-parallel replicas --------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "ReplicaGroup.h"

#include "Transport.h"

#include <cstdlib>
#include <cstring>

#if PIPEDREAM_HAVE_MPI
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace pipedream {
namespace runtime {

#if PIPEDREAM_HAVE_MPI
struct ReplicaGroup::Mpi {
  MPI_Comm comm = MPI_COMM_NULL;
};
#else
struct ReplicaGroup::Mpi {};
#endif

/// One all-reduce: its buckets (runs of consecutive spans of one dtype, at
/// most allReduceBucketBytes; a larger span is a bucket of its own,
/// reduced in place), their memory (kept for the next operation of the same
/// id) and, over MPI, their requests.
struct ReplicaGroup::Operation {
  struct Bucket {
    pd_dtype dtype;
    size_t first, last; // spans [first, last)
    size_t count;
  };
  std::vector<ReduceSpan> spans;
  std::vector<Bucket> plan;
  std::vector<void *> memory;
  std::vector<AlignedMemory> buckets;
  std::vector<size_t> capacity;
  bool inFlight = false;
#if PIPEDREAM_HAVE_MPI
  std::vector<MPI_Request> requests;
#endif
};


size_t allReduceBucketBytes() {
  if (const char *text = std::getenv("PIPEDREAM_ALLREDUCE_BUCKET_BYTES")) {
    char *end = nullptr;
    unsigned long long value = std::strtoull(text, &end, 10);
    if (end != text && *end == '\0' && value > 0)
      return static_cast<size_t>(value);
  }
  return size_t(4) << 20;
}

std::string ReplicaGroup::describeMembers() const {
  std::string text;
  for (size_t q : memberRanks)
    text += (text.empty() ? "" : ", ") + std::to_string(q);
  return text;
}

ReplicaGroup::ReplicaGroup(pd_transport &transport, size_t pipelineRank,
                           size_t replica, std::vector<size_t> members)
    : transport(transport), memberRanks(std::move(members)) {
#if PIPEDREAM_HAVE_MPI
  if (transport.kind == "mpi") {
    mpi = std::make_unique<Mpi>();
    MPI_Comm parent = *static_cast<MPI_Comm *>(mpiDataCommunicator(transport));
    // NOTE: MPI_Comm_split is a blocking collective of every rank (there is
    // no nonblocking split); every rank splits when it creates its pipeline,
    // before any message.
    int code = MPI_Comm_split(parent, static_cast<int>(pipelineRank),
                              static_cast<int>(replica), &mpi->comm);
    if (code != MPI_SUCCESS)
      throw Error(PD_ERROR_IO, "MPI_Comm_split of the replicas of pipeline "
                               "rank " +
                                   std::to_string(pipelineRank) + " failed");
    MPI_Comm_set_errhandler(mpi->comm, MPI_ERRORS_RETURN);
    int size = 0, rank = -1;
    MPI_Comm_size(mpi->comm, &size);
    MPI_Comm_rank(mpi->comm, &rank);
    if (static_cast<size_t>(size) != memberRanks.size() ||
        static_cast<size_t>(rank) != replica)
      throw Error(PD_ERROR_INTERNAL,
                  "internal error: the replica communicator of pipeline "
                  "rank " +
                      std::to_string(pipelineRank) + " has " +
                      std::to_string(size) + " ranks (expected " +
                      std::to_string(memberRanks.size()) + ")");
  }
#else
  (void)pipelineRank;
  (void)replica;
#endif
}

ReplicaGroup::~ReplicaGroup() {
#if PIPEDREAM_HAVE_MPI
  // An all-reduce still in flight (a step that failed between its start
  // and its finish) may still write its buckets: they are not freed.
  for (auto &entry : operations)
    if (mpi && entry.second->inFlight)
      for (AlignedMemory &bucket : entry.second->buckets)
        (void)bucket.release();
  if (mpi && mpi->comm != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Comm_free(&mpi->comm);
  }
#endif
}

size_t ReplicaGroup::allReduce(const std::vector<ReduceSpan> &spans) {
  startAllReduce(kBlockingOperation, spans);
  return finishAllReduce(kBlockingOperation);
}

bool ReplicaGroup::inFlight(size_t id) const {
  auto it = operations.find(id);
  return it != operations.end() && it->second->inFlight;
}

void ReplicaGroup::startAllReduce(size_t id,
                                  const std::vector<ReduceSpan> &spans) {
  std::unique_ptr<Operation> &slot = operations[id];
  if (!slot)
    slot = std::make_unique<Operation>();
  Operation &op = *slot;
  if (op.inFlight)
    throw Error(PD_ERROR_INTERNAL,
                "internal error: all-reduce " + std::to_string(id) +
                    " over the replicas " + describeMembers() +
                    " started twice");
  op.spans = spans;
  op.plan.clear();
  if (memberRanks.size() < 2)
    return;
  const size_t limit = allReduceBucketBytes();
  for (size_t i = 0; i < spans.size(); ++i) {
    const ReduceSpan &s = spans[i];
    if (s.dtype != PD_DTYPE_F32 && s.dtype != PD_DTYPE_F64)
      throw Error(PD_ERROR_UNSUPPORTED,
                  "the replicas' all-reduce sums f32 or f64 gradients; '" +
                      s.name + "' is another type");
    if (s.device && mpi)
      throw Error(PD_ERROR_UNSUPPORTED,
                  "the replicas' all-reduce of device gradient '" + s.name +
                      "' needs the NCCL transport (--transport nccl), not "
                      "MPI");
    size_t bytes = s.count * pd_dtype_size(s.dtype);
    // NOTE: a device span is a bucket of its own, reduced in place.
    if (!s.device && !op.plan.empty() &&
        !spans[op.plan.back().first].device &&
        op.plan.back().dtype == s.dtype &&
        (op.plan.back().count * pd_dtype_size(s.dtype) + bytes) <= limit &&
        op.plan.back().last == i) {
      op.plan.back().last = i + 1;
      op.plan.back().count += s.count;
      continue;
    }
    op.plan.push_back({s.dtype, i, i + 1, s.count});
  }
  if (op.buckets.size() < op.plan.size()) {
    op.buckets.resize(op.plan.size());
    op.capacity.resize(op.plan.size(), 0);
  }
  // Pack (a bucket of one span is summed in place).
  op.memory.assign(op.plan.size(), nullptr);
  for (size_t b = 0; b < op.plan.size(); ++b) {
    const Operation::Bucket &bucket = op.plan[b];
    if (bucket.last - bucket.first == 1) {
      op.memory[b] = spans[bucket.first].data;
      continue;
    }
    size_t bytes = bucket.count * pd_dtype_size(bucket.dtype);
    if (op.capacity[b] < bytes) {
      op.buckets[b] = allocateAligned(bytes, "all-reduce bucket");
      op.capacity[b] = bytes;
    }
    unsigned char *out = op.buckets[b].get();
    for (size_t i = bucket.first; i < bucket.last; ++i) {
      size_t n = spans[i].count * pd_dtype_size(spans[i].dtype);
      std::memcpy(out, spans[i].data, n);
      out += n;
    }
    op.memory[b] = op.buckets[b].get();
  }
  op.inFlight = true;
#if PIPEDREAM_HAVE_MPI
  if (mpi) {
    // Every bucket in flight at once; finishAllReduce waits for them.
    op.requests.assign(op.plan.size(), MPI_REQUEST_NULL);
    for (size_t b = 0; b < op.plan.size(); ++b) {
      if (op.plan[b].count > static_cast<size_t>(INT32_MAX))
        throw Error(PD_ERROR_UNSUPPORTED,
                    "an all-reduce bucket of " +
                        std::to_string(op.plan[b].count) +
                        " elements is over the MPI count limit");
      int code = MPI_Iallreduce(
          MPI_IN_PLACE, op.memory[b], static_cast<int>(op.plan[b].count),
          op.plan[b].dtype == PD_DTYPE_F64 ? MPI_DOUBLE : MPI_FLOAT, MPI_SUM,
          mpi->comm, &op.requests[b]);
      if (code != MPI_SUCCESS)
        throw Error(PD_ERROR_IO, "MPI_Iallreduce over the replicas " +
                                     describeMembers() + " failed");
    }
  }
#endif
}

size_t ReplicaGroup::finishAllReduce(size_t id) {
  auto it = operations.find(id);
  if (it == operations.end() || !it->second->inFlight)
    return 0;
  Operation &op = *it->second;
  // Not in flight any more, whatever happens below (a timeout fails the
  // step; the next one starts afresh).
  op.inFlight = false;
  std::string what = "the all-reduce of the gradients over the replicas " +
                     describeMembers() +
                     ": a replica is stuck, dead or running a program that "
                     "does not match";
#if PIPEDREAM_HAVE_MPI
  if (mpi) {
    for (size_t b = 0; b < op.plan.size(); ++b)
      mpiWaitCollective(transport, &op.requests[b], transport.timeout, what);
  } else
#endif
  {
    // Transports without nonblocking collectives sum here.
    for (size_t b = 0; b < op.plan.size(); ++b) {
      pd_status status = pd_transport_all_reduce(
          &transport, memberRanks.data(), memberRanks.size(), op.memory[b],
          op.plan[b].count, op.plan[b].dtype);
      if (status != PD_OK)
        throw Error(status, pd_last_error());
    }
  }
  // Unpack.
  for (size_t b = 0; b < op.plan.size(); ++b) {
    const Operation::Bucket &bucket = op.plan[b];
    if (bucket.last - bucket.first == 1)
      continue;
    const unsigned char *in = op.buckets[b].get();
    for (size_t i = bucket.first; i < bucket.last; ++i) {
      size_t n = op.spans[i].count * pd_dtype_size(op.spans[i].dtype);
      std::memcpy(op.spans[i].data, in, n);
      in += n;
    }
  }
  return op.plan.size();
}

void ReplicaGroup::allGather(
    size_t replica, const std::vector<std::vector<ReduceSpan>> &byReplica) {
  if (memberRanks.size() < 2)
    return;
  if (byReplica.size() != memberRanks.size() || replica >= byReplica.size())
    throw Error(PD_ERROR_INTERNAL, "internal error: an all-gather of " +
                                       std::to_string(byReplica.size()) +
                                       " parts over " +
                                       std::to_string(memberRanks.size()) +
                                       " replicas");
  auto bytesOf = [](const ReduceSpan &s) {
    return s.count * pd_dtype_size(s.dtype);
  };
  std::string what = "the all-gather of the updated weights over the "
                     "replicas " +
                     describeMembers() +
                     ": a replica is stuck, dead or running a program that "
                     "does not match";
  size_t total = 0;
  std::vector<size_t> partBytes;
  for (const auto &part : byReplica) {
    size_t bytes = 0;
    for (const ReduceSpan &s : part)
      bytes += bytesOf(s);
    partBytes.push_back(bytes);
    total += bytes;
  }
  if (total == 0)
    return;
  AlignedMemory all = allocateAligned(total, "all-gather buffer");
#if PIPEDREAM_HAVE_MPI
  if (mpi) {
    std::vector<int> counts, displacements;
    size_t offset = 0;
    for (size_t bytes : partBytes) {
      if (bytes > static_cast<size_t>(INT32_MAX) ||
          offset > static_cast<size_t>(INT32_MAX))
        throw Error(PD_ERROR_UNSUPPORTED,
                    "an all-gather of " + std::to_string(total) +
                        " bytes is over the MPI count limit");
      counts.push_back(static_cast<int>(bytes));
      displacements.push_back(static_cast<int>(offset));
      offset += bytes;
    }
    unsigned char *own = all.get() + displacements[replica];
    for (const ReduceSpan &s : byReplica[replica]) {
      std::memcpy(own, s.data, bytesOf(s));
      own += bytesOf(s);
    }
    MPI_Request request = MPI_REQUEST_NULL;
    int code = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all.get(),
                               counts.data(), displacements.data(), MPI_BYTE,
                               mpi->comm, &request);
    if (code != MPI_SUCCESS)
      throw Error(PD_ERROR_IO, "MPI_Iallgatherv over the replicas " +
                                   describeMembers() + " failed");
    mpiWaitCollective(transport, &request, transport.timeout, what);
    const unsigned char *in = all.get();
    for (size_t j = 0; j < byReplica.size(); ++j)
      for (const ReduceSpan &s : byReplica[j]) {
        if (j != replica)
          std::memcpy(s.data, in, bytesOf(s));
        in += bytesOf(s);
      }
    return;
  }
#endif
  // One sum per element type, zero outside this replica's part.
  for (pd_dtype dtype : {PD_DTYPE_F32, PD_DTYPE_F64}) {
    size_t count = 0;
    for (const auto &part : byReplica)
      for (const ReduceSpan &s : part) {
        if (s.dtype != PD_DTYPE_F32 && s.dtype != PD_DTYPE_F64)
          throw Error(PD_ERROR_UNSUPPORTED,
                      "the " + transport.kind +
                          " transport all-gathers f32 or f64 weights only; '" +
                          s.name + "' is another type");
        if (s.dtype == dtype)
          count += s.count;
      }
    if (count == 0)
      continue;
    size_t elementBytes = pd_dtype_size(dtype);
    std::memset(all.get(), 0, count * elementBytes);
    unsigned char *out = all.get();
    for (size_t j = 0; j < byReplica.size(); ++j)
      for (const ReduceSpan &s : byReplica[j]) {
        if (s.dtype != dtype)
          continue;
        if (j == replica)
          std::memcpy(out, s.data, s.count * elementBytes);
        out += s.count * elementBytes;
      }
    pd_status status =
        pd_transport_all_reduce(&transport, memberRanks.data(),
                                memberRanks.size(), all.get(), count, dtype);
    if (status != PD_OK)
      throw Error(status, pd_last_error());
    const unsigned char *in = all.get();
    for (size_t j = 0; j < byReplica.size(); ++j)
      for (const ReduceSpan &s : byReplica[j]) {
        if (s.dtype != dtype)
          continue;
        if (j != replica)
          std::memcpy(s.data, in, s.count * elementBytes);
        in += s.count * elementBytes;
      }
  }
}

} // namespace runtime
} // namespace pipedream
