//===- npy-fuzzer.cpp - libFuzzer target for the .npy reader --------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// parseNpy (runtime/lib/Npy.cpp) on arbitrary bytes: a one-line error or an
// array that serializeNpy writes back and parseNpy reads again unchanged.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "pipedream/npy.h"

#include <cstddef>
#include <cstdint>

using namespace pipedream;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  npy::Array array;
  std::string error;
  if (!npy::parseNpy(data, size, array, error)) {
    fuzz::checkError(error, "");
    return 0;
  }
  if (array.data.size() != array.numBytes())
    fuzz::fatal("data size does not match the shape",
                npy::describe(array.dtype, array.shape));
  std::vector<unsigned char> bytes;
  if (!npy::serializeNpy(array, bytes, error))
    fuzz::fatal("serializeNpy failed on a parsed array", error);
  npy::Array again;
  if (!npy::parseNpy(bytes.data(), bytes.size(), again, error))
    fuzz::fatal("parseNpy rejects what serializeNpy wrote", error);
  if (again.dtype != array.dtype || again.shape != array.shape ||
      again.data != array.data)
    fuzz::fatal("round trip changed the array",
                npy::describe(array.dtype, array.shape));
  return 0;
}
