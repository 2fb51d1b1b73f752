//===- npz-fuzzer.cpp - libFuzzer target for the .npz reader --------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// parseNpz (runtime/lib/Npy.cpp; readNpz's archive reader over an image in
// memory) on arbitrary bytes: libzip's directory parsing, inflate, the
// member checks and parseNpy on every member.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "pipedream/npy.h"

#include <cstddef>
#include <cstdint>

using namespace pipedream;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  npy::NamedArrays arrays;
  std::string error;
  if (!npy::parseNpz(data, size, arrays, error)) {
    fuzz::checkError(error, "");
    return 0;
  }
  for (const auto &[name, array] : arrays)
    if (array.data.size() != array.numBytes())
      fuzz::fatal("data size does not match the shape", name);
  return 0;
}
