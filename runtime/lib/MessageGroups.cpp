//===- MessageGroups.cpp - adjacent messages sent as one ------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "MessageGroups.h"

#include "Manifest.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace pipedream {
namespace runtime {
namespace {

using Op = RankInstruction::Op;

/// Where each message of a program stands: (op, peer, tag) -> instruction
/// index. A (op, peer, tag) that occurs twice is ambiguous (`reused`).
class MessageIndex {
public:
  explicit MessageIndex(const RankProgram &program) {
    for (size_t i = 0; i < program.program.size(); ++i) {
      const RankInstruction &ins = program.program[i];
      if (ins.op != Op::Send && ins.op != Op::Recv)
        continue;
      Key key{ins.op == Op::Send, ins.peer, ins.tag};
      if (!where.emplace(key, i).second)
        reused.emplace(ins.op == Op::Send, ins.peer);
    }
  }
  /// The index of the send (or receive) of `tag` to (from) `peer`; -1 when
  /// there is none or the direction reuses tags.
  long find(bool send, size_t peer, int64_t tag) const {
    if (reused.count({send, peer}))
      return -1;
    auto it = where.find(Key{send, peer, tag});
    return it == where.end() ? -1 : static_cast<long>(it->second);
  }

private:
  using Key = std::tuple<bool, size_t, int64_t>;
  std::map<Key, size_t> where;
  std::set<std::pair<bool, size_t>> reused;
};

/// The bytes of instruction `index`'s register (its source or destination).
size_t messageBytes(const RankProgram &program, size_t index) {
  const RankInstruction &ins = program.program[index];
  size_t reg = ins.op == Op::Send ? ins.src : ins.dst;
  return reg < program.registers.size() ? program.registers[reg].numBytes : 0;
}

} // namespace

MessageGroups planMessageGroups(const PipelineSpec &spec, size_t program,
                                size_t maxBytes) {
  if (program >= spec.ranks.size())
    return MessageGroups();
  const RankProgram &mine = spec.ranks[program];
  const auto &code = mine.program;
  MessageGroups groups(code.size());
  std::vector<MessageIndex> indices;
  indices.reserve(spec.ranks.size());
  for (const RankProgram &rank : spec.ranks)
    indices.emplace_back(rank);

  // Whether the messages of instructions i and i + 1 (both sends to, or
  // both receives from, one peer) travel together: the sender's two sends
  // are adjacent, the receiver's two receives are adjacent, in this order,
  // and the sizes agree. The same relation on both ranks.
  auto joined = [&](size_t i) {
    const RankInstruction &a = code[i], &b = code[i + 1];
    if (b.op != a.op || b.peer != a.peer || a.peer >= spec.ranks.size() ||
        a.peer == program)
      return false;
    bool send = a.op == Op::Send;
    const RankProgram &peer = spec.ranks[a.peer];
    const MessageIndex &here = indices[program], &there = indices[a.peer];
    long mineA = here.find(send, a.peer, a.tag);
    long mineB = here.find(send, a.peer, b.tag);
    long peerA = there.find(!send, program, a.tag);
    long peerB = there.find(!send, program, b.tag);
    if (mineA != static_cast<long>(i) || mineB != mineA + 1 || peerA < 0 ||
        peerB != peerA + 1)
      return false;
    return messageBytes(mine, i) ==
               messageBytes(peer, static_cast<size_t>(peerA)) &&
           messageBytes(mine, i + 1) ==
               messageBytes(peer, static_cast<size_t>(peerB));
  };

  for (size_t i = 0; i < code.size();) {
    if (code[i].op != Op::Send && code[i].op != Op::Recv) {
      ++i;
      continue;
    }
    // Greedy from the group's first message: both ranks start at the same
    // message and see the same sizes, so they cut at the same places.
    size_t total = messageBytes(mine, i);
    size_t end = i + 1;
    while (end < code.size() && joined(end - 1) &&
           total + messageBytes(mine, end) <= maxBytes) {
      total += messageBytes(mine, end);
      ++end;
    }
    if (end - i >= 2) {
      std::string tags = "tags ";
      for (size_t j = i; j < end; ++j) {
        groups.members[i].push_back(j);
        groups.follower[j] = j != i;
        tags += (j == i ? "" : ", ") + std::to_string(code[j].tag);
      }
      groups.tags[i] = std::move(tags);
    }
    i = end;
  }
  return groups;
}

} // namespace runtime
} // namespace pipedream
