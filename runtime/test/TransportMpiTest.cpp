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
// for the last ones. Prints "ok" and exits 0, else names the failure and
// exits 1.
//
//===----------------------------------------------------------------------===//

#include "pipedream/runtime.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
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
  pd_transport_destroy(t);
  if (gFailures == 0)
    std::printf("rank %zu: ok\n", rank);
  return gFailures == 0 ? 0 : 1;
}
