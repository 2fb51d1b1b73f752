//===- NcclBootstrap.h - the NCCL transport's bootstrap ---------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pd_transport_create_nccl (pipedream/gpu.h): the NCCL unique id goes from
// rank 0 to the others over a bootstrap transport (mpirun) or over TCP
// (torchrun's environment), then the support library (GpuSupport.h) makes
// the communicator. Layered over both GpuDevice (the support library) and
// Transport (pd_transport), which do not depend on each other through it.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_NCCLBOOTSTRAP_H
#define PIPEDREAM_RUNTIME_LIB_NCCLBOOTSTRAP_H

#include "GpuSupport.h"

#include <cstddef>
#include <functional>
#include <string>

namespace pipedream {
namespace runtime {

/// torchrun's environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
struct TorchrunEnv {
  size_t rank = 0;
  size_t size = 0;
  std::string address;
  int port = 0;
};

/// Reads it through `getenv` (the real one, or a test's); false with a
/// one-line `error` naming the variable when one is missing or malformed.
/// $PIPEDREAM_NCCL_PORT overrides the port of the id exchange (default
/// MASTER_PORT + 1: torchrun's own store listens on MASTER_PORT).
bool parseTorchrunEnv(const std::function<const char *(const char *)> &getenv,
                      TorchrunEnv &env, std::string &error);

/// The torchrun bootstrap of the NCCL transport: rank 0 serves `id` over
/// TCP on env.port to the size-1 other ranks, which connect to
/// env.address:env.port (retrying until `timeout` seconds) and read it into
/// `id`. Throws Error (PD_ERROR_TIMEOUT, PD_ERROR_IO, PD_ERROR_PEER).
void exchangeNcclId(const TorchrunEnv &env, double timeout,
                    unsigned char id[PD_GPU_NCCL_ID_BYTES]);

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_NCCLBOOTSTRAP_H
