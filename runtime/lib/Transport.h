//===- Transport.h - pd_transport behind the C API --------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Every transport (threads, MPI, user-defined) is a pd_transport_ops table
// plus its state; the C entry points in Transport.cpp check arguments and
// add the timeout. Internal to the runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_TRANSPORT_H
#define PIPEDREAM_RUNTIME_LIB_TRANSPORT_H

#include "pipedream/runtime.h"

#include <string>

struct pd_transport {
  std::string kind;
  size_t rank = 0;
  size_t size = 1;
  double timeout = 60;
  pd_transport_ops ops{};
  void *state = nullptr;
};

namespace pipedream {
namespace runtime {

/// $PIPEDREAM_TIMEOUT when it is a positive number, else 60 seconds.
double defaultTimeout();

/// "tag 3" for program tags, "the step loss" / "weights" for the reserved
/// ones, for messages.
std::string describeTag(int64_t tag);

/// TransportMpi.cpp: fills `transport` (kind, rank, size, ops, state), or
/// throws Error (PD_ERROR_UNSUPPORTED without MPI).
void createMpiTransport(pd_transport &transport);
bool mpiAvailable();

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_TRANSPORT_H
