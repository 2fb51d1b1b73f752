//===- IdleWork.h - a rank's work while it waits ----------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// A pipeline rank waits for messages: at a step's start for its first
// activation, between F and B for a gradient. The transports' receive
// loops (the threads transport and MPI's) call runIdleWork() while the
// message has not arrived, so that the rank's thread does useful work
// then: today program.so's GEMM packing, ahead of the calls, the weights
// it packed in the previous step (ConstantWeights, issue 21). Per thread:
// the threads transport runs one rank per thread. Internal to the runtime
// library.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_IDLEWORK_H
#define PIPEDREAM_RUNTIME_LIB_IDLEWORK_H

#include <cstdint>

namespace pipedream {
namespace runtime {

/// One unit of idle work: returns nonzero when it did some (and more may
/// remain), 0 when nothing is left.
using IdleWorkFn = int32_t (*)();

/// The calling thread's idle work (nullptr: none).
inline thread_local IdleWorkFn tIdleWork = nullptr;

/// Sets (or with nullptr clears) the calling thread's idle work.
inline void setIdleWork(IdleWorkFn work) { tIdleWork = work; }

/// Runs one unit of the calling thread's idle work; false when there is
/// none left (then the work is cleared until set again).
inline bool runIdleWork() {
  if (!tIdleWork)
    return false;
  if (tIdleWork())
    return true;
  tIdleWork = nullptr;
  return false;
}

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_IDLEWORK_H
