//===- MessageGroupsTest.cpp - adjacent messages sent as one --------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// planMessageGroups (runtime/lib/MessageGroups.h) on hand-written rank
// programs: which adjacent sends and receives travel together, and that the
// two ends of every message always cut their groups the same way (random
// programs), since a disagreement would be a size mismatch at run time.
//
//===----------------------------------------------------------------------===//

#include "MessageGroups.h"
#include "Manifest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

using pipedream::runtime::MessageGroups;
using pipedream::runtime::PipelineSpec;
using pipedream::runtime::planMessageGroups;
using pipedream::runtime::RankInstruction;
using pipedream::runtime::RankProgram;
using Op = RankInstruction::Op;

namespace {

/// Appends a register of `bytes` bytes to `rank`; returns its index.
size_t addRegister(RankProgram &rank, size_t bytes) {
  pipedream::runtime::TensorType type;
  type.numBytes = bytes;
  type.numElements = bytes / 4;
  type.shape = {static_cast<int64_t>(bytes / 4)};
  rank.registers.push_back(type);
  return rank.registers.size() - 1;
}

void send(RankProgram &rank, size_t peer, int64_t tag, size_t bytes = 64) {
  RankInstruction ins;
  ins.op = Op::Send;
  ins.peer = peer;
  ins.tag = tag;
  ins.src = addRegister(rank, bytes);
  rank.program.push_back(ins);
}

void recv(RankProgram &rank, size_t peer, int64_t tag, size_t bytes = 64) {
  RankInstruction ins;
  ins.op = Op::Recv;
  ins.peer = peer;
  ins.tag = tag;
  ins.dst = addRegister(rank, bytes);
  rank.program.push_back(ins);
}

void call(RankProgram &rank) {
  RankInstruction ins;
  ins.op = Op::Call;
  rank.program.push_back(ins);
}

/// Per instruction of `rank`: the tags of the group it starts, {} when it
/// starts none.
std::vector<std::vector<int64_t>>
groupTags(const PipelineSpec &spec, size_t rank, size_t maxBytes = 1 << 20) {
  MessageGroups groups = planMessageGroups(spec, rank, maxBytes);
  const auto &program = spec.ranks[rank].program;
  EXPECT_EQ(groups.members.size(), program.size());
  std::vector<std::vector<int64_t>> tags(program.size());
  for (size_t i = 0; i < program.size(); ++i) {
    for (size_t m : groups.members[i])
      tags[i].push_back(program[m].tag);
    EXPECT_EQ(groups.follower[i],
              std::any_of(groups.members.begin(), groups.members.end(),
                          [&](const std::vector<size_t> &g) {
                            return g.size() > 1 && g.front() != i &&
                                   std::find(g.begin(), g.end(), i) != g.end();
                          }));
  }
  return tags;
}

using Tags = std::vector<std::vector<int64_t>>;

TEST(MessageGroups, AdjacentOnBothSidesTravelTogether) {
  PipelineSpec spec;
  spec.ranks.resize(2);
  // Rank 0 sends tags 0, 1, 2 in a row; rank 1 receives 0 and 1 in a row,
  // then calls, then receives 2: only 0 and 1 are adjacent on both sides.
  send(spec.ranks[0], 1, 0);
  send(spec.ranks[0], 1, 1);
  send(spec.ranks[0], 1, 2);
  recv(spec.ranks[1], 0, 0);
  recv(spec.ranks[1], 0, 1);
  call(spec.ranks[1]);
  recv(spec.ranks[1], 0, 2);
  EXPECT_EQ(groupTags(spec, 0), (Tags{{0, 1}, {}, {}}));
  EXPECT_EQ(groupTags(spec, 1), (Tags{{0, 1}, {}, {}, {}}));
  MessageGroups groups = planMessageGroups(spec, 0);
  EXPECT_EQ(groups.tags[0], "tags 0, 1");
}

TEST(MessageGroups, OrderSizeAndPeerMustAgree) {
  // Received in the other order.
  PipelineSpec swapped;
  swapped.ranks.resize(2);
  send(swapped.ranks[0], 1, 0);
  send(swapped.ranks[0], 1, 1);
  recv(swapped.ranks[1], 0, 1);
  recv(swapped.ranks[1], 0, 0);
  EXPECT_EQ(groupTags(swapped, 0), (Tags{{}, {}}));
  EXPECT_EQ(groupTags(swapped, 1), (Tags{{}, {}}));

  // Registers of another size on the receiver (a malformed bundle): no
  // group, so the transport reports the mismatch of that one message.
  PipelineSpec sizes;
  sizes.ranks.resize(2);
  send(sizes.ranks[0], 1, 0);
  send(sizes.ranks[0], 1, 1);
  recv(sizes.ranks[1], 0, 0);
  recv(sizes.ranks[1], 0, 1, 32);
  EXPECT_EQ(groupTags(sizes, 0), (Tags{{}, {}}));
  EXPECT_EQ(groupTags(sizes, 1), (Tags{{}, {}}));

  // Adjacent sends to two peers.
  PipelineSpec peers;
  peers.ranks.resize(3);
  send(peers.ranks[0], 1, 0);
  send(peers.ranks[0], 2, 0);
  recv(peers.ranks[1], 0, 0);
  recv(peers.ranks[2], 0, 0);
  EXPECT_EQ(groupTags(peers, 0), (Tags{{}, {}}));
}

TEST(MessageGroups, ReusedTagsGroupNothingInThatDirection) {
  PipelineSpec spec;
  spec.ranks.resize(2);
  send(spec.ranks[0], 1, 0);
  send(spec.ranks[0], 1, 1);
  send(spec.ranks[0], 1, 0);
  recv(spec.ranks[0], 1, 5);
  recv(spec.ranks[0], 1, 6);
  recv(spec.ranks[1], 0, 0);
  recv(spec.ranks[1], 0, 1);
  recv(spec.ranks[1], 0, 0);
  send(spec.ranks[1], 0, 5);
  send(spec.ranks[1], 0, 6);
  // 0 -> 1 reuses tag 0; 1 -> 0 does not.
  EXPECT_EQ(groupTags(spec, 0), (Tags{{}, {}, {}, {5, 6}, {}}));
  EXPECT_EQ(groupTags(spec, 1), (Tags{{}, {}, {}, {5, 6}, {}}));
}

TEST(MessageGroups, ByteLimitCutsBothSidesAlike) {
  PipelineSpec spec;
  spec.ranks.resize(2);
  for (int64_t t = 0; t < 5; ++t) {
    send(spec.ranks[0], 1, t, 100);
    recv(spec.ranks[1], 0, t, 100);
  }
  Tags expected{{0, 1}, {}, {2, 3}, {}, {}};
  EXPECT_EQ(groupTags(spec, 0, 250), expected);
  EXPECT_EQ(groupTags(spec, 1, 250), expected);
  // A message over the limit goes alone.
  EXPECT_EQ(groupTags(spec, 0, 50), (Tags{{}, {}, {}, {}, {}}));
}

/// Random programs of R ranks with unique tags per direction, each rank's
/// messages shuffled into runs separated by calls: the sender's groups and
/// the receiver's groups of every direction are the same tag sequences, and
/// every group's members are adjacent instructions of one peer and op.
TEST(MessageGroups, BothEndsAgreeOnRandomPrograms) {
  std::mt19937 rng(20261206);
  for (int trial = 0; trial < 300; ++trial) {
    size_t ranks = 2 + rng() % 3;
    PipelineSpec spec;
    spec.ranks.resize(ranks);
    // Every directed pair exchanges a few messages; each rank takes its
    // sends and receives in a random order with calls in between.
    std::vector<std::vector<std::pair<bool, std::pair<size_t, int64_t>>>> work(
        ranks);
    std::map<std::pair<size_t, size_t>, std::vector<size_t>> sizes;
    for (size_t a = 0; a < ranks; ++a)
      for (size_t b = 0; b < ranks; ++b) {
        if (a == b)
          continue;
        size_t count = rng() % 6;
        for (size_t t = 0; t < count; ++t) {
          sizes[{a, b}].push_back(4 * (1 + rng() % 3));
          work[a].push_back({true, {b, static_cast<int64_t>(t)}});
          work[b].push_back({false, {a, static_cast<int64_t>(t)}});
        }
      }
    for (size_t r = 0; r < ranks; ++r) {
      // Mostly in tag order (what pipe-project-ranks writes), sometimes not.
      if (rng() % 4 == 0)
        std::shuffle(work[r].begin(), work[r].end(), rng);
      for (auto &[isSend, message] : work[r]) {
        auto [peer, tag] = message;
        size_t bytes = isSend ? sizes[{r, peer}][tag] : sizes[{peer, r}][tag];
        if (isSend)
          send(spec.ranks[r], peer, tag, bytes);
        else
          recv(spec.ranks[r], peer, tag, bytes);
        if (rng() % 3 == 0)
          call(spec.ranks[r]);
      }
    }
    size_t limit = 8 + rng() % 16;
    // (sender, receiver) -> the groups' tag sequences, seen from each end.
    std::map<std::pair<size_t, size_t>, std::vector<std::vector<int64_t>>>
        bySender, byReceiver;
    for (size_t r = 0; r < ranks; ++r) {
      MessageGroups groups = planMessageGroups(spec, r, limit);
      const auto &program = spec.ranks[r].program;
      for (size_t i = 0; i < program.size(); ++i) {
        const auto &members = groups.members[i];
        if (members.empty())
          continue;
        ASSERT_GE(members.size(), 2u);
        std::vector<int64_t> tags;
        size_t bytes = 0;
        for (size_t k = 0; k < members.size(); ++k) {
          const RankInstruction &m = program[members[k]];
          ASSERT_EQ(members[k], i + k);
          ASSERT_EQ(m.op, program[i].op);
          ASSERT_EQ(m.peer, program[i].peer);
          tags.push_back(m.tag);
          bytes += spec.ranks[r]
                       .registers[m.op == Op::Send ? m.src : m.dst]
                       .numBytes;
        }
        ASSERT_LE(bytes, limit);
        if (program[i].op == Op::Send)
          bySender[{r, program[i].peer}].push_back(tags);
        else
          byReceiver[{program[i].peer, r}].push_back(tags);
      }
    }
    for (auto &[pair, groups] : bySender)
      std::sort(groups.begin(), groups.end());
    for (auto &[pair, groups] : byReceiver)
      std::sort(groups.begin(), groups.end());
    ASSERT_EQ(bySender, byReceiver) << "trial " << trial;
  }
}

} // namespace
