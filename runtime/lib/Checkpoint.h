//===- Checkpoint.h - checkpoint files of trainers and pipelines -*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The checkpoint directory (docs/Runtime.md "Checkpoints"): one file per
// rank, `step-<S>.rank-<r>.pdckpt`, each written to a temporary file,
// fsync'ed and renamed, then `checkpoint.json` (the manifest naming the
// step, the bundle's fingerprint and every rank's file with its size and
// CRC-32), written the same way last. Internal to the runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_CHECKPOINT_H
#define PIPEDREAM_RUNTIME_LIB_CHECKPOINT_H

#include "pipedream/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pipedream {
namespace runtime {

/// Called with `what` ("file" or "manifest"), the step and the rank once a
/// temporary checkpoint file is durable and before it is renamed: where the
/// tests of interrupted writes kill the process (pipedream-run-test,
/// tools/pipedream-run/TestHooks.cpp). None is installed by default.
using CheckpointWriteHook = void (*)(const char *what, uint64_t step,
                                     size_t rank);

/// Installs `hook` (nullptr: none) for every later checkpoint write.
/// NOTE: for test programs only; the runtime's C API never installs one.
void setCheckpointWriteHook(CheckpointWriteHook hook);

/// What a rank reports to rank 0 once its file is durable.
struct CheckpointFile {
  uint64_t step = 0;
  uint64_t bytes = 0;
  uint64_t crc32 = 0;
};

/// The buffers a checkpoint of `bundle` holds: the weights on this rank
/// (all of them for a whole bundle) and every `state` buffer it has, in
/// manifest order. `grad` buffers are zero at step boundaries and left out.
std::vector<pd_buffer *> checkpointBuffers(pd_bundle &bundle);

/// Writes rank `rank`'s file of step `step` into `dir` (created if
/// missing) atomically. Throws Error.
CheckpointFile writeRankFile(pd_bundle &bundle, const std::string &dir,
                             uint64_t step, size_t rank, size_t ranks);

/// Writes `dir`/checkpoint.json for step `step` (files[r]: rank r's),
/// atomically, then removes the files of older steps. Throws Error.
void commitCheckpoint(pd_bundle &bundle, const std::string &dir,
                      uint64_t step, const std::vector<CheckpointFile> &files);

/// Reads `dir`/checkpoint.json, checks that it belongs to this bundle
/// (fingerprint, number of ranks) and that every rank's file is complete
/// (size, CRC-32, header), then loads rank `rank`'s buffers. Returns the
/// step. Throws Error (PD_ERROR_NOT_FOUND when `dir` has no checkpoint).
uint64_t loadCheckpoint(pd_bundle &bundle, const std::string &dir,
                        size_t rank, size_t ranks);

/// The step of `dir`'s checkpoint.json; throws Error (PD_ERROR_NOT_FOUND
/// when there is none).
uint64_t checkpointStep(const std::string &dir);

/// checkpoint.json, checked.
struct CheckpointManifest {
  uint64_t step = 0;
  size_t ranks = 0;
  std::string fingerprint;
  std::string model;
  std::vector<std::string> files;
  std::vector<uint64_t> bytes;
  std::vector<uint64_t> crcs;
};

/// Parses checkpoint.json text read from `path` (in directory `dir`).
/// Throws Error (PD_ERROR_FORMAT) with a one-line message naming `path`.
CheckpointManifest parseCheckpointManifest(const std::string &text,
                                           const std::string &path,
                                           const std::string &dir);

/// Verifies the image `bytes` of rank `rank`'s file (read from `path`)
/// against `m`: size, magic, CRC-32, header and every buffer's extent,
/// dtype, shape and role. Throws Error (PD_ERROR_FORMAT).
void checkRankFile(const std::string &bytes, const std::string &path,
                   const CheckpointManifest &m, size_t rank);

/// Internal accessors of the handles (Runtime.cpp, Pipeline.cpp).
pd_bundle *trainerBundle(pd_trainer *trainer);
pd_bundle *pipelineBundle(pd_rank *pipeline);
pd_transport *pipelineTransport(pd_rank *pipeline);

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_CHECKPOINT_H
