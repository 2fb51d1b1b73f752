//===- NcclBootstrap.cpp - the NCCL transport's bootstrap -----------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pd_transport_create_nccl: the id exchange (a bootstrap transport, or TCP
// from torchrun's environment) and the runtime-side transport forwarding to
// the support library's NCCL ops (docs/Runtime.md "GPU bundles").
//
//===----------------------------------------------------------------------===//

#include "NcclBootstrap.h"

#include "pipedream/gpu.h"

#include "Bundle.h"
#include "GpuDevice.h"
#include "Transport.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace pipedream {
namespace runtime {

bool parseTorchrunEnv(const std::function<const char *(const char *)> &getenv,
                      TorchrunEnv &env, std::string &error) {
  auto number = [&](const char *name, long long min, long long max,
                    long long &out) {
    const char *text = getenv(name);
    if (!text || !*text) {
      error = std::string("$") + name +
              " is not set (run under torchrun, or set RANK, WORLD_SIZE, "
              "MASTER_ADDR and MASTER_PORT)";
      return false;
    }
    char *end = nullptr;
    errno = 0;
    long long value = std::strtoll(text, &end, 10);
    if (errno || *end || end == text || value < min || value > max) {
      error = std::string("$") + name + " is '" + text +
              "', expected an integer in [" + std::to_string(min) + ", " +
              std::to_string(max) + "]";
      return false;
    }
    out = value;
    return true;
  };
  long long size = 0, rank = 0, port = 0;
  if (!number("WORLD_SIZE", 1, 1 << 20, size) ||
      !number("RANK", 0, size - 1, rank))
    return false;
  const char *address = getenv("MASTER_ADDR");
  if (!address || !*address) {
    error = "$MASTER_ADDR is not set (the host of rank 0)";
    return false;
  }
  const char *override = getenv("PIPEDREAM_NCCL_PORT");
  if (override && *override) {
    if (!number("PIPEDREAM_NCCL_PORT", 1, 65535, port))
      return false;
  } else {
    if (!number("MASTER_PORT", 1, 65534, port))
      return false;
    ++port;
  }
  env.rank = static_cast<size_t>(rank);
  env.size = static_cast<size_t>(size);
  env.address = address;
  env.port = static_cast<int>(port);
  return true;
}

/// The tag of the NCCL id on a bootstrap transport. NOTE: PD_TAG_TRACE, the
/// embedders' runtime-level tag: the exchange ends before any step runs.
constexpr int64_t kNcclIdTag = PD_TAG_TRACE;

void exchangeNcclId(const TorchrunEnv &env, double timeout,
                    unsigned char id[PD_GPU_NCCL_ID_BYTES]) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration<double>(timeout);
  auto remainingMs = [&] {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - Clock::now())
                    .count();
    return left > 0 ? static_cast<int>(left) : 0;
  };
  std::string where = "NCCL bootstrap (" + env.address + ":" +
                      std::to_string(env.port) + "): ";
  auto sysError = [&](const char *call) {
    return Error(PD_ERROR_IO, where + call + ": " + std::strerror(errno));
  };
  if (env.rank == 0) {
    int server = socket(AF_INET6, SOCK_STREAM, 0);
    bool v6 = server >= 0;
    if (!v6)
      server = socket(AF_INET, SOCK_STREAM, 0);
    if (server < 0)
      throw sysError("socket");
    std::unique_ptr<int, void (*)(int *)> closer(&server,
                                                 [](int *fd) { close(*fd); });
    int one = 1, zero = 0;
    setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int bound;
    if (v6) {
      setsockopt(server, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
      sockaddr_in6 address{};
      address.sin6_family = AF_INET6;
      address.sin6_addr = in6addr_any;
      address.sin6_port = htons(static_cast<uint16_t>(env.port));
      bound = bind(server, reinterpret_cast<sockaddr *>(&address),
                   sizeof(address));
    } else {
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_addr.s_addr = htonl(INADDR_ANY);
      address.sin_port = htons(static_cast<uint16_t>(env.port));
      bound = bind(server, reinterpret_cast<sockaddr *>(&address),
                   sizeof(address));
    }
    if (bound != 0)
      throw sysError("bind");
    if (listen(server, 64) != 0)
      throw sysError("listen");
    for (size_t served = 1; served < env.size; ++served) {
      pollfd wait{server, POLLIN, 0};
      int ready = poll(&wait, 1, remainingMs());
      if (ready <= 0)
        throw Error(PD_ERROR_TIMEOUT,
                    where + "only " + std::to_string(served - 1) + " of " +
                        std::to_string(env.size - 1) +
                        " ranks connected before the timeout");
      int peer = accept(server, nullptr, nullptr);
      if (peer < 0)
        throw sysError("accept");
      ssize_t sent = send(peer, id, PD_GPU_NCCL_ID_BYTES, MSG_NOSIGNAL);
      close(peer);
      if (sent != PD_GPU_NCCL_ID_BYTES)
        throw sysError("send");
    }
    return;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string port = std::to_string(env.port);
  for (;;) {
    addrinfo *list = nullptr;
    int resolved = getaddrinfo(env.address.c_str(), port.c_str(), &hints, &list);
    if (resolved != 0)
      throw Error(PD_ERROR_IO, where + "cannot resolve '" + env.address +
                                   "': " + gai_strerror(resolved));
    for (addrinfo *a = list; a; a = a->ai_next) {
      int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd < 0)
        continue;
      if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        freeaddrinfo(list);
        size_t got = 0;
        while (got < PD_GPU_NCCL_ID_BYTES) {
          pollfd wait{fd, POLLIN, 0};
          if (poll(&wait, 1, remainingMs()) <= 0)
            break;
          ssize_t n = recv(fd, id + got, PD_GPU_NCCL_ID_BYTES - got, 0);
          if (n <= 0)
            break;
          got += static_cast<size_t>(n);
        }
        close(fd);
        if (got != PD_GPU_NCCL_ID_BYTES)
          throw Error(PD_ERROR_PEER,
                      where + "rank 0 closed the connection before sending "
                              "the NCCL id");
        return;
      }
      close(fd);
    }
    freeaddrinfo(list);
    if (remainingMs() == 0)
      throw Error(PD_ERROR_TIMEOUT,
                  where + "rank 0 did not accept a connection before the "
                          "timeout");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

namespace {

/// The runtime-side transport: forwards to the support library's NCCL ops
/// and turns its recorded errors into the thread's last error.
struct NcclForward {
  pd_transport_ops ops{};
  void *state = nullptr;
};

pd_status forwardStatus(pd_status status) {
  if (status != PD_OK) {
    std::string message = takeGpuError();
    fail(status, message.empty() ? "nccl transport failed" : message);
  }
  return status;
}

pd_status forwardSend(void *state, size_t peer, int64_t tag, const void *data,
                      size_t bytes, double timeout) {
  auto *f = static_cast<NcclForward *>(state);
  return forwardStatus(f->ops.send(f->state, peer, tag, data, bytes, timeout));
}
pd_status forwardRecv(void *state, size_t peer, int64_t tag, void *data,
                      size_t bytes, double timeout) {
  auto *f = static_cast<NcclForward *>(state);
  return forwardStatus(f->ops.recv(f->state, peer, tag, data, bytes, timeout));
}
pd_status forwardAllReduce(void *state, const size_t *ranks, size_t numRanks,
                           void *data, size_t count, pd_dtype dtype,
                           double timeout) {
  auto *f = static_cast<NcclForward *>(state);
  if (!f->ops.all_reduce)
    return fail(PD_ERROR_UNSUPPORTED, "nccl: this support library has no "
                                      "all-reduce");
  return forwardStatus(
      f->ops.all_reduce(f->state, ranks, numRanks, data, count, dtype, timeout));
}
void forwardAbort(void *state, const char *reason) {
  auto *f = static_cast<NcclForward *>(state);
  f->ops.abort(f->state, reason);
}
void forwardDestroy(void *state) {
  auto *f = static_cast<NcclForward *>(state);
  f->ops.destroy(f->state);
  delete f;
}

} // namespace

} // namespace runtime
} // namespace pipedream

using pipedream::runtime::Error;
using pipedream::runtime::fail;
using pipedream::runtime::guarded;

pd_status pd_transport_create_nccl(pd_transport *bootstrap,
                                   pd_transport **out) {
  if (!out)
    return pipedream::runtime::nullArgument("pd_transport_create_nccl", "out");
  *out = nullptr;
  return guarded([&] {
    using namespace pipedream::runtime;
    requireCudaDevice("the NCCL transport needs one GPU per rank");
    const pd_gpu_support &gpu = gpuSupport();
    size_t rank, size;
    unsigned char id[PD_GPU_NCCL_ID_BYTES] = {0};
    if (bootstrap) {
      rank = pd_transport_rank(bootstrap);
      size = pd_transport_size(bootstrap);
      if (rank == 0) {
        if (gpu.nccl_unique_id(id) != 0)
          checkGpuError("");
        for (size_t r = 1; r < size; ++r)
          if (pd_transport_send(bootstrap, r, kNcclIdTag, id,
                                sizeof(id)) != PD_OK)
            throw Error(PD_ERROR_PEER, std::string("NCCL bootstrap: ") +
                                           pd_last_error());
      } else if (pd_transport_recv(bootstrap, 0, kNcclIdTag, id,
                                   sizeof(id)) != PD_OK) {
        throw Error(PD_ERROR_PEER,
                    std::string("NCCL bootstrap: ") + pd_last_error());
      }
    } else {
      TorchrunEnv env;
      std::string error;
      if (!parseTorchrunEnv([](const char *name) { return std::getenv(name); },
                            env, error))
        return fail(PD_ERROR_INVALID_ARGUMENT, "NCCL bootstrap: " + error);
      rank = env.rank;
      size = env.size;
      if (rank == 0 && gpu.nccl_unique_id(id) != 0)
        checkGpuError("");
      exchangeNcclId(env, defaultTimeout(), id);
    }
    auto forward = std::make_unique<NcclForward>();
    if (gpu.nccl_create(rank, size, id, &forward->ops, &forward->state) != 0) {
      checkGpuError("");
      throw Error(PD_ERROR_INTERNAL, "NCCL communicator setup failed");
    }
    pd_transport_ops ops{forwardSend, forwardRecv, forwardAbort,
                         forwardDestroy, forwardAllReduce};
    pd_transport *transport = nullptr;
    pd_status status =
        pd_transport_create(&ops, forward.get(), rank, size, &transport);
    if (status != PD_OK) {
      forward->ops.destroy(forward->state);
      return status;
    }
    forward.release();
    transport->kind = "nccl";
    *out = transport;
    return PD_OK;
  });
}
