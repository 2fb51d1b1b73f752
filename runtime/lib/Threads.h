//===- Threads.h - the kernels' thread count in loaded libraries -*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Hooks of Threads.cpp (pipedream/threads.h) for Runtime.cpp's dlopen and
// dlclose of program.so. Internal to the runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_THREADS_H
#define PIPEDREAM_RUNTIME_LIB_THREADS_H

namespace pipedream {
namespace runtime {

/// After dlopen: gives `library` the pd_set_num_threads count (when it has
/// pipedream's CPU kernels) and remembers it for later changes.
void configureThreads(void *library);

/// Before dlclose.
void forgetThreads(void *library);

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_THREADS_H
