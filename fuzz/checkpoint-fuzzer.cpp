//===- checkpoint-fuzzer.cpp - libFuzzer target for checkpoints -----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The checkpoint readers of runtime/lib/Checkpoint.cpp on arbitrary bytes:
// an input starting with a rank file's magic ("PDCKPT01") goes to
// checkRankFile, anything else to parseCheckpointManifest (checkpoint.json).
// For a rank file the target first makes the trailing CRC-32 right and
// builds the manifest entry from the file's own header, so that fuzzing
// reaches the header checks instead of stopping at the checksum; both
// readers may only throw runtime::Error with a one-line message naming
// the file.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "Checkpoint.h"
#include "Manifest.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

using namespace pipedream;

namespace {

/// CRC-32 (IEEE, reflected), as the checkpoint writer computes it.
uint32_t crc32(const unsigned char *data, size_t size) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k)
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

uint64_t getU64(const unsigned char *at) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = value << 8 | at[i];
  return value;
}

void rankFile(std::string bytes) {
  const std::string path = "fuzz/step-00000001.rank-0.pdckpt";
  runtime::CheckpointManifest m;
  m.ranks = 1;
  m.files = {"step-00000001.rank-0.pdckpt"};
  m.bytes = {bytes.size()};
  m.crcs = {0};
  if (bytes.size() >= 32) {
    unsigned char *data = reinterpret_cast<unsigned char *>(&bytes[0]);
    uint32_t crc = crc32(data, bytes.size() - 16);
    for (int i = 0; i < 8; ++i)
      data[bytes.size() - 8 + i] = static_cast<unsigned char>(
          static_cast<uint64_t>(crc) >> (8 * i));
    m.crcs = {crc};
    // The manifest agrees with whatever header the file has.
    uint64_t headerSize = getU64(data + 8);
    if (headerSize <= bytes.size() - 32) {
      nlohmann::json header = nlohmann::json::parse(
          bytes.substr(16, headerSize), nullptr, /*allow_exceptions=*/false);
      if (header.is_object()) {
        if (header.contains("step") && header["step"].is_number_unsigned())
          m.step = header["step"].get<uint64_t>();
        if (header.contains("ranks") && header["ranks"].is_number_unsigned())
          m.ranks = header["ranks"].get<size_t>();
        if (header.contains("bundle_fingerprint") &&
            header["bundle_fingerprint"].is_string())
          m.fingerprint = header["bundle_fingerprint"].get<std::string>();
      }
    }
  }
  try {
    runtime::checkRankFile(bytes, path, m, 0);
  } catch (const runtime::Error &e) {
    fuzz::checkError(e.what(), path + ": ");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  if (bytes.compare(0, 8, "PDCKPT01") == 0) {
    rankFile(std::move(bytes));
    return 0;
  }
  const std::string path = "fuzz/checkpoint.json";
  try {
    runtime::CheckpointManifest m =
        runtime::parseCheckpointManifest(bytes, path, "fuzz");
    if (m.files.size() != m.ranks || m.bytes.size() != m.ranks ||
        m.crcs.size() != m.ranks || m.ranks == 0)
      fuzz::fatal("manifest accepted with inconsistent files", path);
  } catch (const runtime::Error &e) {
    fuzz::checkError(e.what(), path + ": ");
  }
  return 0;
}
