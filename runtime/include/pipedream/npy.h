//===- pipedream/npy.h - .npy / .npz reading and writing --------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// NumPy's array files, as pipedream-run and users' binaries exchange tensors
// with Python: `.npy` (format versions 1.0, 2.0 and 3.0, little-endian,
// C order) and `.npz` (a zip of `NAME.npy` members, stored as np.savez
// writes them or deflated as np.savez_compressed does). bf16 arrays are
// uint16 (`<u2`) arrays of bit patterns.
//
// Part of the runtime library (libpipedream_runtime), C++17. Nothing here
// throws: every function returns false and sets `error` to a one-line
// message, so callers built with -fno-exceptions can use it.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_NPY_H
#define PIPEDREAM_NPY_H

#include "pipedream/runtime.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pipedream {
namespace npy {

/// A dense, row-major (C order), little-endian array.
struct Array {
  pd_dtype dtype = PD_DTYPE_F32;
  std::vector<int64_t> shape;
  std::vector<unsigned char> data;

  /// Product of the extents (1 for a scalar).
  size_t numElements() const;
  /// numElements() * pd_dtype_size(dtype).
  size_t numBytes() const;
};

/// Named arrays in file order, as in an .npz.
using NamedArrays = std::vector<std::pair<std::string, Array>>;

/// How writeNpz stores its members: np.savez or np.savez_compressed.
enum class Compression { Stored, Deflated };

/// The numpy `descr` for a dtype ("<f4", "|b1"...). bf16, which numpy has
/// no type for, is "<u2": its bit patterns as uint16, the way ONNX's
/// numpy_helper and most tools store bfloat16 in numpy arrays.
bool dtypeToDescr(pd_dtype dtype, std::string &descr);
/// The dtype for a numpy `descr`, or false with a message saying why not.
/// "<u2" is bf16 (bit patterns; pipedream has no 16-bit unsigned dtype).
bool dtypeFromDescr(const std::string &descr, pd_dtype &dtype,
                    std::string &error);

/// Parses a whole .npy image (header and data).
bool parseNpy(const void *bytes, size_t size, Array &out, std::string &error);
/// Serializes to .npy: format 1.0 when the header fits, else 2.0; the
/// header is padded so the data starts 64-byte aligned, as numpy does.
bool serializeNpy(const Array &array, std::vector<unsigned char> &out,
                  std::string &error);

/// Reads / writes one .npy file. Messages start with the path.
bool readNpy(const std::string &path, Array &out, std::string &error);
bool writeNpy(const std::string &path, const Array &array, std::string &error);

/// Reads every member of an .npz; names lose their ".npy" suffix. Members
/// that are not .npy arrays, duplicate names and corrupt data are errors.
bool readNpz(const std::string &path, NamedArrays &out, std::string &error);
/// Parses a whole .npz image in memory, as readNpz does a file (messages
/// without the path).
bool parseNpz(const void *bytes, size_t size, NamedArrays &out,
              std::string &error);
/// Writes an .npz that np.load reads; replaces an existing file.
bool writeNpz(const std::string &path, const NamedArrays &arrays,
              Compression compression, std::string &error);

/// "f32[2x3]" ("f32[]" for a scalar), for messages.
std::string describe(pd_dtype dtype, const std::vector<int64_t> &shape);

} // namespace npy
} // namespace pipedream

#endif // PIPEDREAM_NPY_H
