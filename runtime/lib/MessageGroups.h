//===- MessageGroups.h - adjacent messages sent as one ----------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// A stage boundary often carries several values per micro-batch (a GPT's
// residual stream and the value its next LayerNorm reads; a ResNet's two
// branches), which pipe-project-ranks writes as adjacent sends on one rank
// and adjacent receives on the other. Each message costs the transport a
// fixed latency (tens of microseconds over Open MPI's shared memory, issue
// 21), so the runtime sends such a run as one message whose parts are the
// registers (Transport.h, sendParts / recvParts: the threads transport
// copies each part into and out of its mailbox buffer; MPI copies them into
// its send buffer, and the receiver scatters the message it received whole).
//
// The plan is computed on every rank from the programs of all ranks
// (bundle.json holds them all), so both sides of a message agree on it:
// two messages from rank r to rank q travel together when r's sends of
// them are adjacent instructions and so are q's receives, in the same
// order, with the same sizes. A group stops before it would exceed a byte
// limit (larger messages are bandwidth- rather than latency-bound, and a
// transport's send buffer stays small). Internal to the runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_MESSAGEGROUPS_H
#define PIPEDREAM_RUNTIME_LIB_MESSAGEGROUPS_H

#include <cstddef>
#include <string>
#include <vector>

namespace pipedream {
namespace runtime {

struct PipelineSpec;

/// A program's message groups: per instruction of one rank's program.
struct MessageGroups {
  MessageGroups() = default;
  /// No groups in a program of `instructions` instructions.
  explicit MessageGroups(size_t instructions)
      : members(instructions), tags(instructions),
        follower(instructions, false) {}
  /// For the first send or receive of a group of two or more: the indices
  /// of all its instructions, in program order (the first included);
  /// empty for every other instruction.
  std::vector<std::vector<size_t>> members;
  /// For the first of a group: "tags 4, 5" (trace events name the group).
  std::vector<std::string> tags;
  /// True for the members of a group after its first.
  std::vector<bool> follower;
};

/// Default byte limit of one group.
inline constexpr size_t kMessageGroupBytes = size_t(1) << 20;

/// The message groups of `spec.ranks[program]` (one entry per instruction),
/// given the programs of all its peers (`spec.ranks[peer]`). A pair of
/// ranks whose messages reuse a tag in one direction gets no groups in that
/// direction.
MessageGroups planMessageGroups(const PipelineSpec &spec, size_t program,
                                size_t maxBytes = kMessageGroupBytes);

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_MESSAGEGROUPS_H
