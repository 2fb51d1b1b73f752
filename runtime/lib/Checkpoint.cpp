//===- Checkpoint.cpp - checkpoints of trainers and pipelines -------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// pd_trainer_save_checkpoint / _load_checkpoint, pd_rank_save_checkpoint
// / _load_checkpoint and pd_checkpoint_step (docs/Runtime.md
// "Checkpoints").
//
// A checkpoint of step S (S steps done; the next one to run is S) is
//   DIR/step-<S>.rank-<r>.pdckpt   one per rank: every weight the rank holds
//                                  and every `state` buffer (optimizer
//                                  moments, step counters, rng_seed)
//   DIR/checkpoint.json            the manifest, written last
// Each file is written to a temporary file in DIR, fsync'ed, renamed over
// its name and the directory fsync'ed. The manifest names the step, the
// bundle (a fingerprint of its bundle.json) and every rank file with its
// size and CRC-32; the files of older steps are removed only after the new
// manifest is in place, so an interrupted write leaves the previous
// checkpoint complete.
//
// Rank file: "PDCKPT01", a little-endian u64 header length, the JSON
// header (step, rank, ranks, fingerprint, buffers: name, role, dtype,
// shape, offset, bytes), the buffers at 64-byte aligned offsets, then
// "PDCKEND\0" and a u64 CRC-32 of everything before it.
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"

#include "Bundle.h"
#include "Manifest.h"
#include "Transport.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pipedream {
namespace runtime {

namespace {

constexpr char kFileMagic[8] = {'P', 'D', 'C', 'K', 'P', 'T', '0', '1'};
constexpr char kEndMagic[8] = {'P', 'D', 'C', 'K', 'E', 'N', 'D', '\0'};
constexpr const char *kManifestName = "checkpoint.json";
constexpr const char *kFormat = "pipedream-checkpoint";
constexpr int64_t kVersion = 1;

std::string errnoText() { return std::strerror(errno); }

uint32_t crc32(const unsigned char *data, size_t size, uint32_t crc = 0) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (size_t i = 0; i < size; ++i)
    crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

std::string readWhole(const std::string &path, pd_status missing) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(missing, path + ": cannot open: " + errnoText());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad())
    throw Error(PD_ERROR_IO, path + ": cannot read: " + errnoText());
  return bytes.str();
}

/// "fnv1a64:<hex>" of the bundle's bundle.json: the same bundle (same
/// model, schedule, optimizer, batch) has the same fingerprint.
std::string fingerprint(const pd_bundle &bundle) {
  std::string text =
      readWhole(bundle.dir + "/bundle.json", PD_ERROR_IO);
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char hex[32];
  std::snprintf(hex, sizeof(hex), "fnv1a64:%016llx",
                static_cast<unsigned long long>(hash));
  return hex;
}

std::string rankFileName(uint64_t step, size_t rank) {
  char name[96];
  std::snprintf(name, sizeof(name), "step-%08llu.rank-%zu.pdckpt",
                static_cast<unsigned long long>(step), rank);
  return name;
}

/// Parses "step-<S>.rank-<r>.pdckpt[.tmp-XXXXXX]"; false for other names.
bool parseRankFileName(const std::string &name, uint64_t &step) {
  unsigned long long s = 0;
  size_t r = 0;
  int consumed = 0;
  if (std::sscanf(name.c_str(), "step-%llu.rank-%zu.pdckpt%n", &s, &r,
                  &consumed) != 2 ||
      consumed <= 0)
    return false;
  std::string rest = name.substr(static_cast<size_t>(consumed));
  if (!rest.empty() && rest.rfind(".tmp-", 0) != 0)
    return false;
  step = s;
  return true;
}

void makeDirectory(const std::string &dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      throw Error(PD_ERROR_IO,
                  dir + ": cannot write a checkpoint: not a directory");
    return;
  }
  // Parents first (mkdir -p).
  size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0)
    makeDirectory(dir.substr(0, slash));
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    throw Error(PD_ERROR_IO, dir + ": cannot create the checkpoint "
                                   "directory: " +
                                 errnoText());
}

void syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    return;
  ::fsync(fd);
  ::close(fd);
}

/// The hook setCheckpointWriteHook installed (none in a shipped program).
std::atomic<CheckpointWriteHook> &checkpointWriteHook() {
  static std::atomic<CheckpointWriteHook> hook{nullptr};
  return hook;
}

/// Writes `parts` to `path` through a temporary file in the same
/// directory: write, fsync, (test hook), rename, fsync the directory.
void writeDurably(const std::string &dir, const std::string &name,
                  const std::vector<std::pair<const void *, size_t>> &parts,
                  const char *hook, uint64_t step, size_t rank) {
  std::string path = dir + "/" + name;
  std::string pattern = path + ".tmp-XXXXXX";
  std::vector<char> temp(pattern.begin(), pattern.end());
  temp.push_back('\0');
  int fd = ::mkstemp(temp.data());
  if (fd < 0)
    throw Error(PD_ERROR_IO, path + ": cannot write: " + errnoText());
  auto failWith = [&](const std::string &what) {
    std::string message = path + ": cannot write: " + what;
    ::close(fd);
    ::unlink(temp.data());
    throw Error(PD_ERROR_IO, message);
  };
  for (const auto &[data, size] : parts) {
    const char *bytes = static_cast<const char *>(data);
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::write(fd, bytes + done, size - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        failWith(errnoText());
      done += static_cast<size_t>(n);
    }
  }
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  if (::fsync(fd) != 0)
    failWith(errnoText());
  if (CheckpointWriteHook test = checkpointWriteHook().load())
    test(hook, step, rank);
  if (::close(fd) != 0) {
    std::string message = path + ": cannot write: " + errnoText();
    ::unlink(temp.data());
    throw Error(PD_ERROR_IO, message);
  }
  if (std::rename(temp.data(), path.c_str()) != 0) {
    std::string message = path + ": cannot write: " + errnoText();
    ::unlink(temp.data());
    throw Error(PD_ERROR_IO, message);
  }
  syncDirectory(dir);
}

void putU64(unsigned char *at, uint64_t value) {
  for (int i = 0; i < 8; ++i)
    at[i] = static_cast<unsigned char>(value >> (8 * i));
}

uint64_t getU64(const unsigned char *at) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = value << 8 | at[i];
  return value;
}

size_t alignUp(size_t value) {
  return (value + kAlignment - 1) / kAlignment * kAlignment;
}

/// The non-negative integer `object[key]`. Not get<uint64_t>() directly:
/// nlohmann converts a float such as 1e22 with a cast whose overflow is
/// undefined behaviour (found by the checkpoint fuzzer).
uint64_t unsignedAt(const nlohmann::json &object, const char *key) {
  const nlohmann::json &value = object.at(key);
  if (value.is_number_unsigned())
    return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0)
    return static_cast<uint64_t>(value.get<int64_t>());
  throw std::invalid_argument(std::string("'") + key +
                              "' is not a non-negative integer");
}

/// `object[key]` as a shape: an array of non-negative integers.
std::vector<int64_t> shapeAt(const nlohmann::json &object, const char *key) {
  const nlohmann::json &value = object.at(key);
  if (!value.is_array())
    throw std::invalid_argument(std::string("'") + key + "' is not an array");
  std::vector<int64_t> shape;
  for (const nlohmann::json &extent : value) {
    if (!extent.is_number_integer() || extent.get<int64_t>() < 0)
      throw std::invalid_argument(std::string("'") + key +
                                  "' holds a value that is not a "
                                  "non-negative integer");
    shape.push_back(extent.get<int64_t>());
  }
  return shape;
}

using ManifestView = CheckpointManifest;

} // namespace

void setCheckpointWriteHook(CheckpointWriteHook hook) {
  checkpointWriteHook().store(hook);
}

nlohmann::json parseRankFileHeader(const std::string &bytes,
                                   const std::string &path,
                                   const CheckpointManifest &m, size_t rank);

namespace {

ManifestView readManifest(const std::string &dir) {
  std::string path = dir + "/" + kManifestName;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw Error(PD_ERROR_NOT_FOUND,
                dir + ": no checkpoint (no " + kManifestName + ")");
  return parseCheckpointManifest(readWhole(path, PD_ERROR_IO), path, dir);
}

struct RankFileView {
  std::string bytes;
  nlohmann::json header;
};

/// Reads and verifies rank `rank`'s file against the manifest.
RankFileView readRankFile(const std::string &dir, const ManifestView &m,
                          size_t rank) {
  std::string path = dir + "/" + m.files[rank];
  RankFileView view;
  view.bytes = readWhole(path, PD_ERROR_NOT_FOUND);
  view.header = parseRankFileHeader(view.bytes, path, m, rank);
  return view;
}

std::string describeSpec(const nlohmann::json &b) {
  pd_dtype dtype = PD_DTYPE_F32;
  parseDtype(b.at("dtype").get<std::string>(), dtype);
  std::vector<int64_t> shape = shapeAt(b, "shape");
  return b.at("role").get<std::string>() + " " +
         describeType(dtype, shape.data(), shape.size());
}

} // namespace

CheckpointManifest parseCheckpointManifest(const std::string &text,
                                           const std::string &path,
                                           const std::string &dir) {
  ManifestView view;
  try {
    nlohmann::json json = nlohmann::json::parse(text);
    if (json.at("format").get<std::string>() != kFormat ||
        !json.at("version").is_number_integer() ||
        json.at("version").get<int64_t>() != kVersion)
      throw Error(PD_ERROR_FORMAT, path + ": not a pipedream checkpoint "
                                          "manifest of version 1");
    view.step = unsignedAt(json, "step");
    view.ranks = unsignedAt(json, "ranks");
    view.fingerprint = json.at("bundle_fingerprint").get<std::string>();
    view.model = json.value("model", "");
    const nlohmann::json &files = json.at("files");
    if (!files.is_array() || files.size() != view.ranks || view.ranks == 0)
      throw Error(PD_ERROR_FORMAT,
                  path + ": 'files' must list one file per rank");
    for (size_t r = 0; r < files.size(); ++r) {
      if (unsignedAt(files[r], "rank") != r)
        throw Error(PD_ERROR_FORMAT,
                    path + ": files[" + std::to_string(r) + "] is not rank " +
                        std::to_string(r) + "'s");
      std::string name = files[r].at("file").get<std::string>();
      if (name.empty() || name.find('/') != std::string::npos)
        throw Error(PD_ERROR_FORMAT, path + ": files[" + std::to_string(r) +
                                         "].file must be a file name in " +
                                         dir);
      view.files.push_back(name);
      view.bytes.push_back(unsignedAt(files[r], "bytes"));
      view.crcs.push_back(unsignedAt(files[r], "crc32"));
    }
  } catch (const Error &e) {
    // Names quoted from the file may hold newlines.
    throw Error(e.status, oneLine(e.what()));
  } catch (const std::exception &e) {
    throw Error(PD_ERROR_FORMAT, oneLine(path + ": corrupt checkpoint "
                                                "manifest (" +
                                         e.what() + ")"));
  }
  return view;
}

nlohmann::json parseRankFileHeader(const std::string &bytes,
                                   const std::string &path,
                                   const CheckpointManifest &m, size_t rank) {
  nlohmann::json header;
  const std::string corrupt =
      oneLine(path + ": corrupt checkpoint file (rank " +
              std::to_string(rank) + " of step " + std::to_string(m.step) +
              "): ");
  if (bytes.size() != m.bytes[rank])
    throw Error(PD_ERROR_FORMAT,
                corrupt + "it has " + std::to_string(bytes.size()) +
                    " bytes, the manifest says " +
                    std::to_string(m.bytes[rank]));
  const unsigned char *data =
      reinterpret_cast<const unsigned char *>(bytes.data());
  size_t size = bytes.size();
  if (size < 32 || std::memcmp(data, kFileMagic, 8) != 0 ||
      std::memcmp(data + size - 16, kEndMagic, 8) != 0)
    throw Error(PD_ERROR_FORMAT, corrupt + "bad magic");
  uint32_t crc = crc32(data, size - 16);
  if (crc != getU64(data + size - 8) || crc != m.crcs[rank])
    throw Error(PD_ERROR_FORMAT, corrupt + "CRC-32 mismatch");
  uint64_t headerSize = getU64(data + 8);
  if (headerSize > size - 32)
    throw Error(PD_ERROR_FORMAT, corrupt + "bad header length");
  try {
    header = nlohmann::json::parse(bytes.substr(16, headerSize));
    if (unsignedAt(header, "step") != m.step ||
        unsignedAt(header, "rank") != rank ||
        unsignedAt(header, "ranks") != m.ranks ||
        header.at("bundle_fingerprint").get<std::string>() !=
            m.fingerprint)
      throw Error(PD_ERROR_FORMAT,
                  corrupt + "its header does not match the manifest");
    for (const nlohmann::json &b : header.at("buffers")) {
      uint64_t offset = unsignedAt(b, "offset");
      uint64_t length = unsignedAt(b, "bytes");
      std::string name = b.at("name").get<std::string>();
      if (offset > size - 16 || length > size - 16 - offset)
        throw Error(PD_ERROR_FORMAT,
                    corrupt + "buffer '" + name + "' lies outside the file");
      // Its dtype, shape and role are what loadCheckpoint matches against
      // the bundle's buffer, whose byte size it then copies: they must
      // agree with `bytes`.
      TensorType type;
      if (!b.at("dtype").is_string() ||
          !parseDtype(b.at("dtype").get<std::string>(), type.dtype))
        throw Error(PD_ERROR_FORMAT,
                    corrupt + "buffer '" + name + "' has an unknown dtype");
      pd_role role;
      if (!b.at("role").is_string() ||
          !parseRole(b.at("role").get<std::string>(), role))
        throw Error(PD_ERROR_FORMAT,
                    corrupt + "buffer '" + name + "' has an unknown role");
      type.shape = shapeAt(b, "shape");
      for (int64_t extent : type.shape)
        if (extent < 0)
          throw Error(PD_ERROR_FORMAT, corrupt + "buffer '" + name +
                                           "' has a negative extent");
      computeSizes(type, corrupt + "buffer '" + name + "'");
      if (type.numBytes != length)
        throw Error(PD_ERROR_FORMAT,
                    corrupt + "buffer '" + name + "' has " +
                        std::to_string(length) + " bytes, its type " +
                        describeType(type.dtype, type.shape.data(),
                                     type.shape.size()) +
                        " needs " + std::to_string(type.numBytes));
    }
  } catch (const Error &e) {
    throw Error(e.status, oneLine(e.what()));
  } catch (const std::exception &e) {
    throw Error(PD_ERROR_FORMAT,
                oneLine(corrupt + "bad header (" + e.what() + ")"));
  }
  return header;
}

void checkRankFile(const std::string &bytes, const std::string &path,
                   const CheckpointManifest &m, size_t rank) {
  if (rank >= m.files.size())
    throw Error(PD_ERROR_FORMAT, path + ": no rank " + std::to_string(rank) +
                                     " in the manifest");
  parseRankFileHeader(bytes, path, m, rank);
}

std::vector<pd_buffer *> checkpointBuffers(pd_bundle &bundle) {
  std::vector<pd_buffer *> buffers;
  for (auto &weight : bundle.weights)
    if (weight->onRank)
      buffers.push_back(weight.get());
  for (auto &buffer : bundle.persistent)
    if (buffer->role == PD_ROLE_STATE)
      buffers.push_back(buffer.get());
  return buffers;
}

CheckpointFile writeRankFile(pd_bundle &bundle, const std::string &dir,
                             uint64_t step, size_t rank, size_t ranks) {
  makeDirectory(dir);
  std::vector<pd_buffer *> buffers = checkpointBuffers(bundle);
  nlohmann::json header;
  header["step"] = step;
  header["rank"] = rank;
  header["ranks"] = ranks;
  header["bundle_fingerprint"] = fingerprint(bundle);
  nlohmann::json list = nlohmann::json::array();
  // Offsets: the header's size depends on them, so lay out the data after
  // a generous bound on it and pad.
  std::vector<size_t> offsets;
  size_t end = 0;
  for (pd_buffer *b : buffers) {
    offsets.push_back(end);
    end = alignUp(end + b->type.numBytes);
  }
  auto build = [&](size_t base) {
    list = nlohmann::json::array();
    for (size_t i = 0; i < buffers.size(); ++i)
      list.push_back({{"name", buffers[i]->name},
                      {"role", pd_role_name(buffers[i]->role)},
                      {"dtype", pd_dtype_name(buffers[i]->type.dtype)},
                      {"shape", buffers[i]->type.shape},
                      {"offset", base + offsets[i]},
                      {"bytes", buffers[i]->type.numBytes}});
    header["buffers"] = list;
    return header.dump();
  };
  // The data starts after the header; the header's length grows with the
  // digits of the offsets, so iterate until it fits.
  size_t base = alignUp(16 + build(0).size());
  std::string text = build(base);
  while (alignUp(16 + text.size()) > base) {
    base = alignUp(16 + text.size());
    text = build(base);
  }
  std::vector<unsigned char> prefix(base, 0);
  std::memcpy(prefix.data(), kFileMagic, 8);
  putU64(prefix.data() + 8, text.size());
  std::memcpy(prefix.data() + 16, text.data(), text.size());

  std::vector<std::pair<const void *, size_t>> parts;
  parts.push_back({prefix.data(), prefix.size()});
  uint32_t crc = crc32(prefix.data(), prefix.size());
  static const unsigned char zeros[kAlignment] = {};
  size_t at = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const unsigned char *memory = ensureMemory(*buffers[i]);
    size_t bytes = buffers[i]->type.numBytes;
    parts.push_back({memory, bytes});
    crc = crc32(memory, bytes, crc);
    at = offsets[i] + bytes;
    size_t pad = alignUp(at) - at;
    if (pad) {
      parts.push_back({zeros, pad});
      crc = crc32(zeros, pad, crc);
    }
    at += pad;
  }
  unsigned char trailer[16];
  std::memcpy(trailer, kEndMagic, 8);
  putU64(trailer + 8, crc);
  parts.push_back({trailer, sizeof(trailer)});
  writeDurably(dir, rankFileName(step, rank), parts, "file", step, rank);
  return CheckpointFile{step, static_cast<uint64_t>(base + at + 16), crc};
}

void commitCheckpoint(pd_bundle &bundle, const std::string &dir,
                      uint64_t step, const std::vector<CheckpointFile> &files) {
  nlohmann::json json;
  json["format"] = kFormat;
  json["version"] = kVersion;
  json["step"] = step;
  json["ranks"] = files.size();
  json["model"] = bundle.manifest.model;
  json["bundle"] = bundle.dir;
  json["bundle_fingerprint"] = fingerprint(bundle);
  nlohmann::json list = nlohmann::json::array();
  for (size_t r = 0; r < files.size(); ++r)
    list.push_back({{"rank", r},
                    {"file", rankFileName(step, r)},
                    {"bytes", files[r].bytes},
                    {"crc32", files[r].crc32}});
  json["files"] = list;
  std::string text = json.dump(2) + "\n";
  writeDurably(dir, kManifestName, {{text.data(), text.size()}}, "manifest",
               step, 0);
  // The new checkpoint is complete: drop older steps' files and temporary
  // files left by interrupted writes of older steps.
  if (DIR *d = ::opendir(dir.c_str())) {
    std::vector<std::string> stale;
    while (struct dirent *entry = ::readdir(d)) {
      uint64_t s = 0;
      std::string name = entry->d_name;
      if (parseRankFileName(name, s) && s < step)
        stale.push_back(name);
      if (name.rfind(std::string(kManifestName) + ".tmp-", 0) == 0)
        stale.push_back(name);
    }
    ::closedir(d);
    for (const std::string &name : stale)
      ::unlink((dir + "/" + name).c_str());
  }
}

uint64_t checkpointStep(const std::string &dir) {
  return readManifest(dir).step;
}

namespace {

uint64_t loadCheckpointImpl(pd_bundle &bundle, const std::string &dir,
                            size_t rank, size_t ranks) {
  ManifestView m = readManifest(dir);
  std::string manifestPath = dir + "/" + kManifestName;
  std::string ours = fingerprint(bundle);
  if (m.fingerprint != ours)
    throw Error(PD_ERROR_MISMATCH,
                manifestPath + ": the checkpoint of step " +
                    std::to_string(m.step) + " was written by another bundle" +
                    (m.model.empty() ? "" : " (model '" + m.model + "')") +
                    " than " + bundle.dir +
                    " (bundle.json differs); resume with the bundle that "
                    "wrote it, or use another checkpoint directory");
  if (m.ranks != ranks)
    throw Error(PD_ERROR_MISMATCH,
                manifestPath + ": the checkpoint has " +
                    std::to_string(m.ranks) + " ranks, this run " +
                    std::to_string(ranks));
  // Every rank verifies every file, so all ranks refuse a damaged
  // checkpoint alike (the same one-line message).
  std::vector<RankFileView> views;
  for (size_t r = 0; r < m.ranks; ++r)
    views.push_back(readRankFile(dir, m, r));
  RankFileView &mine = views[rank];
  std::string path = dir + "/" + m.files[rank];

  std::map<std::string, pd_buffer *> byName;
  for (auto &weight : bundle.weights)
    byName[weight->name] = weight.get();
  for (auto &buffer : bundle.persistent)
    byName[buffer->name] = buffer.get();
  std::map<std::string, const nlohmann::json *> inFile;
  for (const nlohmann::json &b : mine.header.at("buffers")) {
    std::string name = b.at("name").get<std::string>();
    auto it = byName.find(name);
    std::string spec = describeSpec(b);
    if (it == byName.end() ||
        spec != std::string(pd_role_name(it->second->role)) + " " +
                    describeType(it->second->type.dtype,
                                 it->second->type.shape.data(),
                                 it->second->type.shape.size()))
      throw Error(PD_ERROR_MISMATCH,
                  path + ": " + spec + " '" + name + "' " +
                      (it == byName.end()
                           ? "is not a buffer of " + bundle.dir
                           : "is " + std::string(pd_role_name(
                                         it->second->role)) +
                                 " " +
                                 describeType(it->second->type.dtype,
                                              it->second->type.shape.data(),
                                              it->second->type.shape.size()) +
                                 " in " + bundle.dir) +
                      "; the checkpoint belongs to another bundle");
    inFile[name] = &b;
  }
  // A whole bundle running one pipeline rank holds weights the rank does
  // not use; only rank and training bundles must find all theirs.
  bool strict = bundle.rank >= 0 || !bundle.manifest.hasPipeline;
  if (strict)
    for (pd_buffer *b : checkpointBuffers(bundle))
      if (!inFile.count(b->name))
        throw Error(PD_ERROR_MISMATCH,
                    path + ": no " + pd_role_name(b->role) + " '" + b->name +
                        "' in the checkpoint; it belongs to another bundle");
  const unsigned char *data =
      reinterpret_cast<const unsigned char *>(mine.bytes.data());
  for (const auto &[name, b] : inFile) {
    pd_buffer &buffer = *byName[name];
    if (!buffer.onRank)
      continue;
    std::memcpy(ensureMemory(buffer), data + unsignedAt(*b, "offset"),
                buffer.type.numBytes);
  }
  return m.step;
}

} // namespace

uint64_t loadCheckpoint(pd_bundle &bundle, const std::string &dir,
                        size_t rank, size_t ranks) {
  try {
    return loadCheckpointImpl(bundle, dir, rank, ranks);
  } catch (const Error &e) {
    // Names quoted from the checkpoint (buffers, model) may hold newlines.
    throw Error(e.status, oneLine(e.what()));
  }
}

} // namespace runtime
} // namespace pipedream

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

using namespace pipedream::runtime;

pd_status pd_checkpoint_step(const char *dir, uint64_t *step) {
  if (step)
    *step = 0;
  if (!dir)
    return nullArgument("pd_checkpoint_step", "dir");
  if (!step)
    return nullArgument("pd_checkpoint_step", "step");
  return guarded([&] {
    *step = checkpointStep(dir);
    return PD_OK;
  });
}

pd_status pd_trainer_save_checkpoint(pd_trainer *trainer, const char *dir,
                                     uint64_t step) {
  if (!trainer)
    return nullArgument("pd_trainer_save_checkpoint", "trainer");
  if (!dir)
    return nullArgument("pd_trainer_save_checkpoint", "dir");
  return guarded([&] {
    pd_bundle &bundle = *trainerBundle(trainer);
    CheckpointFile file = writeRankFile(bundle, dir, step, 0, 1);
    commitCheckpoint(bundle, dir, step, {file});
    return PD_OK;
  });
}

pd_status pd_trainer_load_checkpoint(pd_trainer *trainer, const char *dir,
                                     uint64_t *step) {
  if (step)
    *step = 0;
  if (!trainer)
    return nullArgument("pd_trainer_load_checkpoint", "trainer");
  if (!dir)
    return nullArgument("pd_trainer_load_checkpoint", "dir");
  return guarded([&] {
    uint64_t s = loadCheckpoint(*trainerBundle(trainer), dir, 0, 1);
    if (step)
      *step = s;
    return PD_OK;
  });
}

namespace {
/// As Pipeline.cpp's onRank: "rank r: " in front, the peers told.
template <typename Body> pd_status onPipelineRank(pd_rank *p, Body &&body) {
  pd_status status = guarded(body);
  if (status != PD_OK) {
    std::string message = pd_last_error();
    pd_transport_abort(pipelineTransport(p), message.c_str());
    fail(status, "rank " + std::to_string(pd_rank_index(p)) + ": " + message);
  }
  return status;
}
} // namespace

pd_status pd_rank_save_checkpoint(pd_rank *pipeline, const char *dir,
                                  uint64_t step) {
  if (!pipeline)
    return nullArgument("pd_rank_save_checkpoint", "pipeline");
  if (!dir)
    return nullArgument("pd_rank_save_checkpoint", "dir");
  return onPipelineRank(pipeline, [&] {
    pd_bundle &bundle = *pipelineBundle(pipeline);
    pd_transport *transport = pipelineTransport(pipeline);
    size_t rank = pd_rank_index(pipeline);
    size_t ranks = pd_bundle_pipeline_ranks(&bundle);
    CheckpointFile mine = writeRankFile(bundle, dir, step, rank, ranks);
    if (rank != 0) {
      uint64_t report[3] = {mine.step, mine.bytes, mine.crc32};
      if (pd_transport_send(transport, 0, PD_TAG_CHECKPOINT, report,
                            sizeof(report)) != PD_OK)
        throw Error(PD_ERROR_PEER, std::string("checkpoint of step ") +
                                       std::to_string(step) + ": " +
                                       pd_last_error());
      return PD_OK;
    }
    // Rank 0 commits once every rank's file is durable.
    std::vector<CheckpointFile> files(ranks);
    files[0] = mine;
    for (size_t r = 1; r < ranks; ++r) {
      uint64_t report[3] = {};
      pd_status status = pd_transport_recv(transport, r, PD_TAG_CHECKPOINT,
                                           report, sizeof(report));
      if (status != PD_OK)
        throw Error(status, std::string("checkpoint of step ") +
                                std::to_string(step) + ": " + pd_last_error());
      if (report[0] != step)
        throw Error(PD_ERROR_INTERNAL,
                    "checkpoint of step " + std::to_string(step) + ": rank " +
                        std::to_string(r) + " wrote step " +
                        std::to_string(report[0]));
      files[r] = CheckpointFile{report[0], report[1], report[2]};
    }
    commitCheckpoint(bundle, dir, step, files);
    return PD_OK;
  });
}

pd_status pd_rank_load_checkpoint(pd_rank *pipeline, const char *dir,
                                  uint64_t *step) {
  if (step)
    *step = 0;
  if (!pipeline)
    return nullArgument("pd_rank_load_checkpoint", "pipeline");
  if (!dir)
    return nullArgument("pd_rank_load_checkpoint", "dir");
  // Not collective and not aborting: every rank reads the same files and
  // refuses a bad checkpoint alike.
  return guarded([&] {
    pd_bundle &bundle = *pipelineBundle(pipeline);
    uint64_t s = loadCheckpoint(bundle, dir, pd_rank_index(pipeline),
                                pd_bundle_pipeline_ranks(&bundle));
    if (step)
      *step = s;
    return PD_OK;
  });
}
