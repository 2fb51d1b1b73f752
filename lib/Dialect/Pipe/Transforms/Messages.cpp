//===- Messages.cpp - per-rank send/recv orders and their checks -----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/Messages.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace pipedream {
namespace pipe {
namespace schedule {

static std::string describe(int64_t rank, const Event &e) {
  std::ostringstream os;
  if (e.kind == Event::Send)
    os << "rank " << rank << ": send to rank " << e.peer << " tag " << e.tag;
  else if (e.kind == Event::Recv)
    os << "rank " << rank << ": receive from rank " << e.peer << " tag "
       << e.tag;
  else if (e.kind == Event::Collective) {
    os << "rank " << rank << ": all-reduce of '" << e.what << "' over ranks";
    for (size_t i = 0; i < e.group.size(); ++i)
      os << (i ? ", " : " ") << e.group[i];
  } else
    os << "rank " << rank << ": " << (e.what.empty() ? "local work" : e.what);
  return os.str();
}

static std::string ordinal(size_t i) {
  std::string n = std::to_string(i + 1);
  size_t mod100 = (i + 1) % 100, mod10 = (i + 1) % 10;
  if (mod100 >= 11 && mod100 <= 13)
    return n + "th";
  return n + (mod10 == 1 ? "st" : mod10 == 2 ? "nd" : mod10 == 3 ? "rd" : "th");
}

Diagnostic verifyMessages(const RankEvents &ranks) {
  int64_t k = ranks.size();
  // Peers.
  for (int64_t r = 0; r < k; ++r)
    for (size_t i = 0; i < ranks[r].size(); ++i) {
      const Event &e = ranks[r][i];
      if (e.kind == Event::Compute)
        continue;
      if (e.kind == Event::Collective) {
        bool valid = e.group.size() >= 2 &&
                     std::is_sorted(e.group.begin(), e.group.end()) &&
                     std::adjacent_find(e.group.begin(), e.group.end()) ==
                         e.group.end() &&
                     e.group.front() >= 0 && e.group.back() < k &&
                     std::binary_search(e.group.begin(), e.group.end(), r);
        if (!valid)
          return {describe(r, e) + ": the group must be two or more distinct "
                                   "ranks in [0, " +
                      std::to_string(k) + "), this one among them",
                  r, (int64_t)i};
        continue;
      }
      if (e.peer < 0 || e.peer >= k || e.peer == r)
        return {describe(r, e) + ": the peer must be another rank in [0, " +
                    std::to_string(k) + ")",
                r, (int64_t)i};
    }

  // Per ordered pair: sends of s to d against receives of d from s.
  for (int64_t s = 0; s < k; ++s) {
    for (int64_t d = 0; d < k; ++d) {
      if (s == d)
        continue;
      std::vector<size_t> sends, recvs;
      for (size_t i = 0; i < ranks[s].size(); ++i)
        if (ranks[s][i].kind == Event::Send && ranks[s][i].peer == d)
          sends.push_back(i);
      for (size_t i = 0; i < ranks[d].size(); ++i)
        if (ranks[d][i].kind == Event::Recv && ranks[d][i].peer == s)
          recvs.push_back(i);
      std::map<int64_t, size_t> tags;
      for (size_t j = 0; j < sends.size(); ++j) {
        const Event &e = ranks[s][sends[j]];
        auto [it, inserted] = tags.insert({e.tag, sends[j]});
        if (!inserted)
          return {describe(s, e) + ": tag " + std::to_string(e.tag) +
                      " is already used by an earlier send to rank " +
                      std::to_string(d) + " (tags are unique per pair)",
                  s, (int64_t)sends[j]};
      }
      size_t n = std::min(sends.size(), recvs.size());
      for (size_t j = 0; j < n; ++j) {
        const Event &snd = ranks[s][sends[j]], &rcv = ranks[d][recvs[j]];
        if (snd.tag != rcv.tag)
          return {describe(d, rcv) + ": the " + ordinal(j) +
                      " message from rank " + std::to_string(s) +
                      " is sent with tag " + std::to_string(snd.tag) +
                      " (messages of a pair arrive in the order they are "
                      "sent)",
                  d, (int64_t)recvs[j]};
        if (snd.type != rcv.type)
          return {describe(d, rcv) + ": receives " + rcv.type +
                      " but rank " + std::to_string(s) + " sends " +
                      snd.type,
                  d, (int64_t)recvs[j]};
      }
      if (sends.size() > n)
        return {describe(s, ranks[s][sends[n]]) +
                    ": no matching receive on rank " + std::to_string(d),
                s, (int64_t)sends[n]};
      if (recvs.size() > n)
        return {describe(d, ranks[d][recvs[n]]) +
                    ": no matching send on rank " + std::to_string(s),
                d, (int64_t)recvs[n]};
    }
  }

  // Collectives: per group, the i-th on every member is the same one.
  {
    std::map<std::vector<int64_t>, std::vector<std::vector<size_t>>> byGroup;
    for (int64_t r = 0; r < k; ++r)
      for (size_t i = 0; i < ranks[r].size(); ++i)
        if (ranks[r][i].kind == Event::Collective) {
          auto &members = byGroup[ranks[r][i].group];
          members.resize(k);
          members[r].push_back(i);
        }
    for (auto &[group, members] : byGroup) {
      int64_t first = group.front();
      for (int64_t r : group) {
        size_t n = std::min(members[first].size(), members[r].size());
        for (size_t j = 0; j < n; ++j) {
          const Event &a = ranks[first][members[first][j]];
          const Event &e = ranks[r][members[r][j]];
          if (a.what != e.what || a.type != e.type)
            return {describe(r, e) + " (" + e.type + "): the " + ordinal(j) +
                        " all-reduce of this group on rank " +
                        std::to_string(first) + " is of '" + a.what + "' (" +
                        a.type + ")",
                    r, (int64_t)members[r][j]};
        }
        if (members[first].size() != members[r].size()) {
          int64_t more = members[first].size() > n ? first : r;
          return {describe(more, ranks[more][members[more][n]]) +
                      ": not every rank of the group runs it (rank " +
                      std::to_string(more == first ? r : first) + " has " +
                      std::to_string(n) + " all-reduces of this group)",
                  more, (int64_t)members[more][n]};
        }
      }
    }
  }

  // Rendezvous execution.
  std::vector<size_t> pc(k, 0);
  auto head = [&](int64_t r) -> const Event * {
    return pc[r] < ranks[r].size() ? &ranks[r][pc[r]] : nullptr;
  };
  while (true) {
    bool progress = false, done = true;
    for (int64_t r = 0; r < k; ++r) {
      while (head(r) && head(r)->kind == Event::Compute) {
        ++pc[r];
        progress = true;
      }
    }
    for (int64_t r = 0; r < k; ++r) {
      const Event *e = head(r);
      if (!e)
        continue;
      done = false;
      if (e->kind == Event::Collective) {
        bool all = true;
        for (int64_t m : e->group) {
          const Event *o = head(m);
          all &= o && o->kind == Event::Collective && o->group == e->group &&
                 o->what == e->what;
        }
        if (all && r == e->group.front()) {
          for (int64_t m : e->group)
            ++pc[m];
          progress = true;
        }
        continue;
      }
      if (e->kind != Event::Send)
        continue;
      const Event *o = head(e->peer);
      if (o && o->kind == Event::Recv && o->peer == r && o->tag == e->tag) {
        ++pc[r];
        ++pc[e->peer];
        progress = true;
      }
    }
    if (done)
      return {};
    if (!progress) {
      std::ostringstream os;
      os << "deadlock under blocking send/recv:";
      int64_t first = -1;
      for (int64_t r = 0; r < k; ++r)
        if (const Event *e = head(r)) {
          os << " " << describe(r, *e) << " (event " << pc[r] << ") waits;";
          if (first < 0)
            first = r;
        }
      std::string msg = os.str();
      msg.pop_back();
      return {msg, first, (int64_t)pc[first]};
    }
  }
}

RankEvents projectMessages(const Schedule &s) {
  const Config &c = s.config;
  int64_t k = c.numRanks, numStages = c.numVirtualStages();
  SimResult sim = simulate(s, Costs::unit(c));
  std::vector<std::tuple<double, int64_t, int64_t>> order;
  for (int64_t r = 0; r < k; ++r)
    for (size_t i = 0; i < s.ranks[r].size(); ++i)
      order.push_back({sim.timeline[r][i].start, r, (int64_t)i});
  std::sort(order.begin(), order.end());
  RankEvents out(k);
  std::map<std::pair<int64_t, int64_t>, int64_t> nextTag;
  for (auto [start, r, i] : order) {
    const Action &a = s.ranks[r][i];
    Event work;
    work.what = std::string(1, opLetter(a.op)) + " of stage " +
                std::to_string(a.stage) + " micro-batch " +
                std::to_string(a.microbatch);
    out[r].push_back(work);
    int64_t to = -1;
    if (a.op == Op::F && a.stage + 1 < numStages)
      to = a.stage + 1;
    if (a.op == Op::B && a.stage > 0)
      to = a.stage - 1;
    if (to < 0 || c.rankOf(to) == r)
      continue;
    int64_t d = c.rankOf(to);
    int64_t tag = nextTag[{r, d}]++;
    std::string type = a.op == Op::F ? "activation" : "gradient";
    // The receiver's reader: F of the next stage, B of the previous one.
    std::string reader = std::string(1, opLetter(a.op)) + " of stage " +
                         std::to_string(to) + " micro-batch " +
                         std::to_string(a.microbatch);
    out[r].push_back({Event::Send, d, tag, type, "", {}});
    out[d].push_back({Event::Recv, r, tag, type, reader, {}});
  }
  // Sink every receive past the local work after it, up to the next message
  // or the action that reads it (its `what`).
  for (auto &list : out) {
    for (size_t i = list.size(); i-- > 0;) {
      if (list[i].kind != Event::Recv)
        continue;
      size_t j = i;
      while (j + 1 < list.size() && list[j + 1].kind == Event::Compute &&
             list[j + 1].what != list[j].what)
        std::swap(list[j], list[j + 1]), ++j;
    }
  }
  return out;
}

} // namespace schedule
} // namespace pipe
} // namespace pipedream
