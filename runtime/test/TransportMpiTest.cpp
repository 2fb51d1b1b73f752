//===- TransportMpiTest.cpp - the MPI transport's buffered sends ---------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Run by CTest under `mpirun -np 2` (runtime/test/CMakeLists.txt). Sends
// return before their receiver takes them (TransportMpi.cpp): the message
// must have been copied, so the sender overwrites its buffer at once while
// the receiver is still asleep; messages of one tag arrive in order; many
// large sends in flight at once all arrive; the transport's destroy waits
// for the last ones. Messages in parts (Transport.h sendParts / recvParts,
// the message groups of MessageGroups.h) are their parts' bytes in order,
// whatever the parts on either side, and a receive whose parts add up to
// another size than the message's fails with a mismatch. Run three ways
// (runtime/test/CMakeLists.txt): with the shared-memory channels between
// the two ranks (ShmChannel.h; the 1 MiB messages fill the slots while
// rank 1 sleeps, so one tag's messages come partly through slots and
// partly over MPI), with small slots (the large messages all over MPI,
// the small ones through slots), and without channels
// (PIPEDREAM_MPI_SHM=0). More small messages than a channel's notice ring
// holds wait for the receiver and arrive in order; a receive that nothing
// answers times out. Prints "ok" and exits 0, else names the failure and
// exits 1.
//
//===----------------------------------------------------------------------===//

#include "pipedream/runtime.h"

#include "Transport.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

int gFailures = 0;

void expect(bool ok, const char *what, size_t rank) {
  if (!ok) {
    std::fprintf(stderr, "rank %zu: FAILED: %s (%s)\n", rank, what,
                 pd_last_error());
    ++gFailures;
  }
}

float pattern(int message, size_t i) {
  return static_cast<float>(message * 1000003 + static_cast<int>(i % 9973));
}

} // namespace

int main() {
  pd_transport *t = nullptr;
  if (pd_transport_create_mpi(&t) != PD_OK) {
    std::fprintf(stderr, "pd_transport_create_mpi: %s\n", pd_last_error());
    return 1;
  }
  size_t rank = pd_transport_rank(t);
  if (pd_transport_size(t) != 2) {
    std::fprintf(stderr, "run with mpirun -np 2\n");
    return 1;
  }
  pd_transport_set_timeout(t, 20);
  const char *shm = std::getenv("PIPEDREAM_MPI_SHM");
  bool channels = !(shm && std::string(shm) == "0");
  expect(pipedream::runtime::mpiSharedMemoryPeers(*t) == (channels ? 1u : 0u),
         channels ? "a channel to the other rank of this host"
                  : "no channel with PIPEDREAM_MPI_SHM=0",
         rank);
  // 1 MiB messages: Open MPI's rendezvous protocol, many fragments.
  const size_t n = 256 * 1024;
  const int messages = 12;
  std::vector<float> buffer(n);
  if (rank == 0) {
    // One buffer for every message, rewritten right after each send.
    for (int m = 0; m < messages; ++m) {
      for (size_t i = 0; i < n; ++i)
        buffer[i] = pattern(m, i);
      int64_t tag = m % 3;
      expect(pd_transport_send(t, 1, tag, buffer.data(), n * sizeof(float)) ==
                 PD_OK,
             "send", rank);
    }
    for (size_t i = 0; i < n; ++i)
      buffer[i] = -1.0f;
    // The reply: rank 1 received everything.
    float reply = 0;
    expect(pd_transport_recv(t, 1, 7, &reply, sizeof(reply)) == PD_OK,
           "recv reply", rank);
    expect(reply == static_cast<float>(messages), "rank 1's count", rank);
    // The last sends of a program: destroy delivers them.
    for (int m = 0; m < 3; ++m) {
      for (size_t i = 0; i < n; ++i)
        buffer[i] = pattern(100 + m, i);
      expect(pd_transport_send(t, 1, 8, buffer.data(), n * sizeof(float)) ==
                 PD_OK,
             "last send", rank);
    }
  } else {
    // Asleep while rank 0 sends: its sends cannot have waited for us.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    // Tags out of send order; within a tag, in order.
    int received = 0;
    for (int64_t tag = 2; tag >= 0; --tag)
      for (int m = static_cast<int>(tag); m < messages; m += 3) {
        expect(pd_transport_recv(t, 0, tag, buffer.data(),
                                 n * sizeof(float)) == PD_OK,
               "recv", rank);
        bool same = true;
        for (size_t i = 0; i < n && same; ++i)
          same = buffer[i] == pattern(m, i);
        expect(same, "message content (a send did not copy its data?)", rank);
        ++received;
      }
    float count = static_cast<float>(received);
    expect(pd_transport_send(t, 0, 7, &count, sizeof(count)) == PD_OK,
           "send reply", rank);
    for (int m = 0; m < 3; ++m) {
      expect(pd_transport_recv(t, 0, 8, buffer.data(), n * sizeof(float)) ==
                 PD_OK,
             "recv last", rank);
      bool same = true;
      for (size_t i = 0; i < n && same; ++i)
        same = buffer[i] == pattern(100 + m, i);
      expect(same, "last message content", rank);
    }
  }
  // Messages in parts: 160 KiB + 0 + 96 KiB sent, received as 20 KiB +
  // 236 KiB, then as one part; one contiguous send received in 3 parts.
  using pipedream::runtime::MessagePart;
  std::vector<float> whole(64 * 1024);
  for (size_t i = 0; i < whole.size(); ++i)
    whole[i] = pattern(200, i);
  const size_t wholeBytes = whole.size() * sizeof(float);
  if (rank == 0) {
    std::vector<float> a(whole.begin(), whole.begin() + 40 * 1024),
        c(whole.begin() + 40 * 1024, whole.end());
    MessagePart parts[] = {{a.data(), a.size() * sizeof(float)},
                           {nullptr, 0},
                           {c.data(), c.size() * sizeof(float)}};
    for (int64_t tag : {10, 11})
      expect(pipedream::runtime::sendParts(*t, 1, tag, parts, 3) == PD_OK,
             "send in parts", rank);
    expect(pd_transport_send(t, 1, 12, whole.data(), wholeBytes) == PD_OK,
           "send whole", rank);
    float small[2] = {1, 2};
    expect(pd_transport_send(t, 1, 13, small, sizeof(small)) == PD_OK,
           "send small", rank);
  } else {
    auto same = [&](const std::vector<float> &got) { return got == whole; };
    std::vector<float> got(whole.size(), -1.0f);
    MessagePart two[] = {
        {got.data(), 5 * 1024 * sizeof(float)},
        {got.data() + 5 * 1024, (whole.size() - 5 * 1024) * sizeof(float)}};
    expect(pipedream::runtime::recvParts(*t, 0, 10, two, 2) == PD_OK,
           "recv in parts", rank);
    expect(same(got), "parts' content, received in other parts", rank);
    got.assign(whole.size(), -1.0f);
    expect(pd_transport_recv(t, 0, 11, got.data(), wholeBytes) == PD_OK,
           "recv parts whole", rank);
    expect(same(got), "parts' content, received whole", rank);
    got.assign(whole.size(), -1.0f);
    MessagePart three[] = {
        {got.data(), 4}, {got.data() + 1, 0}, {got.data() + 1, wholeBytes - 4}};
    expect(pipedream::runtime::recvParts(*t, 0, 12, three, 3) == PD_OK,
           "recv whole in parts", rank);
    expect(same(got), "whole message's content, received in parts", rank);
    float small[4];
    MessagePart larger[] = {{small, 8}, {small + 2, 8}};
    expect(pipedream::runtime::recvParts(*t, 0, 13, larger, 2) ==
               PD_ERROR_MISMATCH,
           "a message shorter than the parts is a mismatch", rank);
  }
  // More small messages than a channel's notice ring holds (1024), sent
  // while the receiver sleeps: the sender waits for room, nothing is lost
  // or reordered.
  const int many = 3000;
  if (rank == 0) {
    for (int m = 0; m < many; ++m) {
      int64_t value = m;
      expect(pd_transport_send(t, 1, 40, &value, sizeof(value)) == PD_OK,
             "send small message", rank);
    }
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    bool inOrder = true;
    for (int m = 0; m < many && inOrder; ++m) {
      int64_t value = -1;
      expect(pd_transport_recv(t, 0, 40, &value, sizeof(value)) == PD_OK,
             "recv small message", rank);
      inOrder = value == m;
    }
    expect(inOrder, "small messages in order", rank);
    // Nobody sends tag 41: the receive times out.
    pd_transport_set_timeout(t, 0.3);
    int64_t value = 0;
    expect(pd_transport_recv(t, 0, 41, &value, sizeof(value)) ==
               PD_ERROR_TIMEOUT,
           "a receive nobody answers times out", rank);
    pd_transport_set_timeout(t, 20);
  }
  // Both ranks here before either destroys (rank 1's timeout above).
  int64_t done = 1;
  if (rank == 0)
    expect(pd_transport_recv(t, 1, 42, &done, sizeof(done)) == PD_OK,
           "recv done", rank);
  else
    expect(pd_transport_send(t, 0, 42, &done, sizeof(done)) == PD_OK,
           "send done", rank);
  pd_transport_destroy(t);
  if (gFailures == 0)
    std::printf("rank %zu: ok\n", rank);
  return gFailures == 0 ? 0 : 1;
}
