//===- Bundle.h - the runtime's objects behind the C handles ----*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pd_bundle, pd_function and pd_buffer as Runtime.cpp implements them, and
// the helpers the other parts of the library (Pipeline.cpp, the transports)
// share with it: errors at the C boundary, aligned memory, running a
// function. Internal to the runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_LIB_BUNDLE_H
#define PIPEDREAM_RUNTIME_LIB_BUNDLE_H

#include "pipedream/runtime.h"

#include "Manifest.h"

#include <cstdint>

#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace pipedream {
namespace runtime {

/// The ABI of every compiled function (docs/Bundle.md).
using EntryPoint = void (*)(void **);

/// The run-time status record of program.so (docs/Bundle.md "Run-time
/// checks"), one per thread; the field order is cpu-lower-run-time-checks'.
struct CheckRecord {
  int64_t failed;
  int64_t value;
  int64_t lower;
  int64_t upper;
  /// Three NUL-terminated strings: ONNX op type, node name, input name.
  const char *info;
};
/// `pipedream_run_time_status`: the calling thread's record.
using CheckRecordAccessor = CheckRecord *(*)();

/// The first failed check of the last call of `function` on this thread
/// ("node '/tok/Gather' (op Gather): index 500 out of range [-61, 61) in
/// input 'idx'"), clearing the record; "" when none failed.
std::string takeCheckFailure(const pd_function &function);

/// The first non-finite element of a floating-point buffer's host memory
/// ("inf at element 3"), or "" when every element is finite (or the buffer
/// is not floating-point).
std::string describeNonFinite(const pd_buffer &buffer);

struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};
using AlignedMemory = std::unique_ptr<unsigned char, FreeDeleter>;

/// Zeroed memory of `bytes` (at least one alignment unit, so a zero-sized
/// buffer still has a distinct, aligned address), kAlignment-aligned.
/// Throws Error (PD_ERROR_OUT_OF_MEMORY) naming `what`.
AlignedMemory allocateAligned(size_t bytes, const std::string &what);

/// One data array of a training step, already matched by dtype and trailing
/// shape to the buffer `name` that reads it (`rowBytes` bytes per sample):
/// throws an Error (prefixed by `prefix`) when its byte count does not hold
/// whole samples, its data is NULL, or its sample count differs from the
/// first array's (`first`/`numSamples`, set by the first call).
void checkDataRows(const std::string &prefix, const std::string &name,
                   const pd_named_array &array, size_t rowBytes,
                   const pd_named_array *&first, size_t &numSamples);

/// "f32[Nx4]": the type of a data array of micro-batches of `type`
/// (N samples).
std::string describeDataType(const TensorType &type);

/// One data buffer a training step reads: its name, one micro-batch's type,
/// whether it holds the labels, and the bytes of one sample.
struct DataRead {
  const std::string *name;
  const TensorType *type;
  bool isLabels;
  size_t rowBytes;
};

/// Finds the array of each of `reads` among `arrays` by name and checks it
/// (dtype and trailing shape, then checkDataRows); a mismatch reads
/// "..., but READER labels 'y' as i64[N] (N samples)" with `reader` e.g.
/// "the pipeline reads". Sets numSamples; returns the arrays in `reads`
/// order. Throws Error.
std::vector<const pd_named_array *>
matchDataArrays(const std::vector<DataRead> &reads, const std::string &reader,
                const pd_named_array *arrays, size_t count,
                size_t &numSamples);

/// Cross-entropy labels: throws an Error naming array `name`, the row (and
/// the element index for multi-dimensional labels) and the value, unless
/// the `rows` rows from `firstRow` (modulo `numSamples`) of `labels`
/// (`perRow` elements of `dtype`, i64 or i32 each) are in [0, numClasses).
void checkLabelRange(const std::string &name, pd_dtype dtype, size_t perRow,
                     int64_t numClasses, const pd_named_array &labels,
                     size_t numSamples, size_t firstRow, size_t rows);

/// Sets the thread's last error and returns `status`.
pd_status fail(pd_status status, std::string message);
/// "<function>: '<argument>' is NULL" (PD_ERROR_INVALID_ARGUMENT).
pd_status nullArgument(const char *function, const char *argument);

/// Runs `body` and converts whatever it throws into a status and message.
template <typename Body> pd_status guarded(Body &&body) {
  try {
    return body();
  } catch (const Error &e) {
    return fail(e.status, e.what());
  } catch (const std::bad_alloc &) {
    return fail(PD_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return fail(PD_ERROR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(PD_ERROR_INTERNAL, "internal error: unknown exception");
  }
}

} // namespace runtime
} // namespace pipedream

struct pd_buffer {
  std::string name;
  /// "input 'x' of function 'main'" / "weight 'fc1.weight'", for messages.
  std::string what;
  pd_role role = PD_ROLE_INPUT;
  pipedream::runtime::TensorType type;
  /// NULL until first use for the value buffers of a bundle opened for one
  /// rank (the pipeline passes registers instead), and for the weights that
  /// rank does not hold (`onRank` false).
  pipedream::runtime::AlignedMemory memory;
  /// False for a weight none of the rank's functions uses (a bundle opened
  /// with pd_bundle_open_rank); it has no memory until gathered.
  bool onRank = true;
  /// Set by pd_buffer_write / pd_buffer_data; persistent buffers start
  /// written.
  bool written = false;
  /// `updates` of an output ("" if none).
  std::string updates;
  /// An in-place output (BufferSpec::inPlace): the persistent buffer it
  /// updates, whose memory stands for it (ensureMemory); it has none.
  pd_buffer *inPlaceOf = nullptr;
  /// A buffer of a `"target": "cuda"` bundle (GpuDevice.cpp): `memory` is
  /// its host copy, `device` its device copy (NULL until a call needs it),
  /// and the flags say which copy holds the value.
  bool cuda = false;
  void *device = nullptr;
  bool hostCurrent = true;
  bool deviceCurrent = false;

  pd_buffer() = default;
  pd_buffer(const pd_buffer &) = delete;
  pd_buffer &operator=(const pd_buffer &) = delete;
  /// Frees the device copy.
  ~pd_buffer();
};

struct pd_function {
  pipedream::runtime::FunctionSpec spec;
  /// Index into Manifest::functions.
  size_t index = 0;
  pipedream::runtime::EntryPoint entry = nullptr;
  /// program.so's status record accessor (NULL for a library without one:
  /// hand-written test bundles; their calls never fail a check).
  pipedream::runtime::CheckRecordAccessor checkRecord = nullptr;
  /// Its bundle targets cuda: `entry` takes device pointers
  /// (invokeFunction translates).
  bool cuda = false;
  /// cuda: (index into `buffers` of an input, bundle.json
  /// `data_index_checks` entry for it), checked on the host before each
  /// call (DataIndexChecks.h).
  std::vector<std::pair<size_t, const pipedream::runtime::DataIndexCheck *>>
      hostIndexChecks;
  /// Manifest order; weight entries point at the bundle's weights.
  std::vector<pd_buffer *> buffers;
  /// Owned input/output buffers (persistent ones are the bundle's).
  std::vector<std::unique_ptr<pd_buffer>> owned;
  /// (output, persistent buffer it updates): memory swapped after a run,
  /// except for in-place outputs (`inPlaceOf`), whose value is already
  /// in the persistent buffer.
  std::vector<std::pair<pd_buffer *, pd_buffer *>> updates;
  /// The pointer array handed to `entry`, rebuilt for each call so the
  /// callee cannot corrupt ours.
  std::vector<void *> arguments;
};

struct pd_bundle {
  std::string dir;
  pipedream::runtime::Manifest manifest;
  /// The pipeline rank it was opened for (pd_bundle_open_rank), else -1.
  int64_t rank = -1;
  void *library = nullptr;
  /// Every weight of the manifest, in its order (on a rank bundle, those of
  /// other ranks have no memory).
  std::vector<std::unique_ptr<pd_buffer>> weights;
  /// `grad` and `state` buffers, Manifest::persistent order (on a rank
  /// bundle only the rank's).
  std::vector<std::unique_ptr<pd_buffer>> persistent;
  /// Manifest::persistent index -> buffer (NULL when not on this rank).
  std::vector<pd_buffer *> persistentByIndex;
  /// The loaded functions (on a rank bundle only those its program calls).
  std::vector<std::unique_ptr<pd_function>> functions;
  /// Manifest::functions index -> function (NULL when not loaded).
  std::vector<pd_function *> functionByIndex;
  /// Trainers and pipelines not destroyed yet (freed with the bundle).
  std::vector<std::unique_ptr<pd_trainer>> trainers;
  std::vector<pd_rank *> pipelines;

  pd_bundle() = default;
  pd_bundle(const pd_bundle &) = delete;
  pd_bundle &operator=(const pd_bundle &) = delete;
  ~pd_bundle();
};

namespace pipedream {
namespace runtime {

/// The buffer's memory, allocated now if it is a value buffer of a rank
/// bundle not used yet. Throws Error for a weight that is not on this rank.
unsigned char *ensureMemory(pd_buffer &buffer);

/// Reads weight `index` of the manifest from the weights file into its
/// buffer (allocating it). Throws Error.
void loadWeightFromFile(pd_bundle &bundle, size_t index);

/// Calls `function` on its buffers, then applies its `updates`
/// (Runtime.cpp; used by pd_function_run and the trainer). Throws Error.
void runFunction(pd_function &function);

/// The buffer's host memory for reading: a cuda buffer's device-newer
/// value is downloaded, and the device copy stays current. Throws Error.
unsigned char *readMemory(const pd_buffer &buffer);

/// Destroys a pipeline (Pipeline.cpp), for ~pd_bundle.
void destroyPipeline(pd_rank *pipeline);

} // namespace runtime
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_LIB_BUNDLE_H
