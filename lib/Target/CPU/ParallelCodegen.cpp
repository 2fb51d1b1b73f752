//===- ParallelCodegen.cpp - LLVM opt + codegen on all cores --------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// See include/pipedream/Target/CPU/ParallelCodegen.h. Why split: LLVM's
// optimization and instruction selection run one function at a time, one
// thread per module; a training step is thousands of loop nests. Split, each
// part gets a core (what `clang -flto=thin` and IREE do). Parts are
// serialized to bitcode and read back in an LLVMContext per thread: an
// LLVMContext must not be shared between threads.
//
// NOTE: SplitModule externalizes local symbols (external linkage, hidden
// visibility) so parts can call each other; hidden symbols stay out of
// program.so's dynamic symbol table, so the library exports what it
// exported before (the entry wrappers).
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/ParallelCodegen.h"
#include "pipedream/Support/CompileTiming.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CachePruning.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <dlfcn.h>
#include <mutex>

using namespace mlir;

namespace pipedream::cpu {

std::string resolveObjectCacheDir(const CPUCodegenOptions &options) {
  if (!options.useCache)
    return "";
  if (std::optional<std::string> off =
          llvm::sys::Process::GetEnv("PIPEDREAM_NO_CACHE"))
    if (!off->empty() && *off != "0")
      return "";
  if (!options.cacheDir.empty())
    return options.cacheDir;
  if (std::optional<std::string> dir =
          llvm::sys::Process::GetEnv("PIPEDREAM_CACHE_DIR"))
    if (!dir->empty())
      return *dir;
  llvm::SmallString<256> path;
  if (std::optional<std::string> xdg =
          llvm::sys::Process::GetEnv("XDG_CACHE_HOME");
      xdg && !xdg->empty())
    path = *xdg;
  else if (!llvm::sys::path::home_directory(path))
    return "";
  else
    llvm::sys::path::append(path, ".cache");
  llvm::sys::path::append(path, "pipedream");
  return std::string(path);
}

unsigned resolveCodegenThreads(const CPUCodegenOptions &options) {
  if (options.codegenThreads)
    return options.codegenThreads;
  return std::max(1u, llvm::hardware_concurrency().compute_thread_count());
}

namespace {

/// What identifies the code generator that produced an object besides its
/// input IR: this binary (the file holding this code: the tool or the
/// Python extension), its size and time, and the LLVM version. A rebuilt
/// pipedream never reads objects of an older one.
std::string compilerIdentity() {
  static std::once_flag once;
  static std::string identity;
  std::call_once(once, [] {
    identity = "pipedream-object-v1 llvm-" LLVM_VERSION_STRING;
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&compilerIdentity), &info) &&
        info.dli_fname) {
      llvm::sys::fs::file_status status;
      if (!llvm::sys::fs::status(info.dli_fname, status))
        identity += llvm::formatv(
            " {0} {1} {2}", info.dli_fname, status.getSize(),
            status.getLastModificationTime().time_since_epoch().count());
    }
  });
  return identity;
}

/// One part of the split module.
struct Part {
  llvm::SmallVector<char, 0> bitcode;
  std::string cachePath;
  llvm::SmallVector<char, 0> object;
  std::string error;
  bool cached = false;
};

/// Optimizes `module` and emits its object, with a target machine of its
/// own (target machines are not shared between threads).
llvm::Error optimizeAndEmit(llvm::Module &module,
                            const CPUCodegenOptions &options,
                            llvm::SmallVectorImpl<char> &object, bool timed) {
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(options);
  if (!machine)
    return machine.takeError();
  {
    std::optional<TimedPhase> phase;
    if (timed)
      phase.emplace("LLVM opt");
    optimizeLLVMModule(module, **machine, options.optLevel);
  }
  std::optional<TimedPhase> phase;
  if (timed)
    phase.emplace("codegen");
  return emitObjectFile(module, **machine, object);
}

/// The cache file of a part with this bitcode.
std::string cachePathFor(StringRef dir, ArrayRef<char> bitcode,
                         const CPUCodegenOptions &options,
                         llvm::TargetMachine &machine) {
  llvm::SHA256 hash;
  std::string salt =
      llvm::formatv("{0}\n{1}\n{2}\n{3}\nO{4}\n", compilerIdentity(),
                    machine.getTargetTriple().str(), machine.getTargetCPU(),
                    machine.getTargetFeatureString(), options.optLevel);
  hash.update(salt);
  hash.update(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(bitcode.data()), bitcode.size()));
  std::array<uint8_t, 32> digest = hash.final();
  llvm::SmallString<256> path(dir);
  // The prefix llvm::pruneCache looks for.
  llvm::sys::path::append(path, "llvmcache-pipedream-" +
                                    llvm::toHex(digest, /*LowerCase=*/true) +
                                    ".o");
  return std::string(path);
}

/// Reads the cached object of `part`, if there is one.
bool readCached(Part &part) {
  if (part.cachePath.empty())
    return false;
  auto buffer = llvm::MemoryBuffer::getFile(part.cachePath);
  if (!buffer || (*buffer)->getBufferSize() == 0)
    return false;
  part.object.assign((*buffer)->getBufferStart(), (*buffer)->getBufferEnd());
  part.cached = true;
  return true;
}

/// Writes `part`'s object to the cache, atomically (a unique temporary
/// renamed into place). Best effort: a cache that cannot be written only
/// costs time.
void writeCached(const Part &part) {
  if (part.cachePath.empty() || part.cached)
    return;
  llvm::SmallString<256> model(part.cachePath);
  model += ".%%%%%%.tmp";
  int fd;
  llvm::SmallString<256> temporary;
  if (llvm::sys::fs::createUniqueFile(model, fd, temporary))
    return;
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(part.object.data(), part.object.size());
    os.close();
    if (os.has_error()) {
      os.clear_error();
      llvm::sys::fs::remove(temporary);
      return;
    }
  }
  if (llvm::sys::fs::rename(temporary, part.cachePath))
    llvm::sys::fs::remove(temporary);
}

} // namespace

llvm::Error compileToObjects(std::unique_ptr<llvm::Module> module,
                             const CPUCodegenOptions &options,
                             std::vector<llvm::SmallVector<char, 0>> &objects) {
  objects.clear();
  unsigned threads = resolveCodegenThreads(options);
  std::string cacheDir = resolveObjectCacheDir(options);
  if (!cacheDir.empty() && llvm::sys::fs::create_directories(cacheDir))
    cacheDir.clear();
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(options);
  if (!machine)
    return machine.takeError();

  unsigned defined = 0;
  for (llvm::Function &function : *module)
    defined += !function.isDeclaration();
  unsigned partCount = std::max(1u, std::min(threads, defined));

  std::vector<Part> parts;
  if (partCount == 1) {
    // One module on this thread, as before (no bitcode round trip unless
    // the cache needs its hash).
    Part part;
    if (!cacheDir.empty()) {
      TimedPhase phase("hash for the object cache");
      llvm::raw_svector_ostream os(part.bitcode);
      llvm::WriteBitcodeToFile(*module, os);
      part.cachePath = cachePathFor(cacheDir, part.bitcode, options, **machine);
    }
    if (!readCached(part)) {
      if (llvm::Error error = optimizeAndEmit(*module, options, part.object,
                                              /*timed=*/true))
        return error;
      writeCached(part);
    }
    objects.push_back(std::move(part.object));
  } else {
    {
      TimedPhase phase("split module");
      llvm::SplitModule(
          *module, partCount,
          [&](std::unique_ptr<llvm::Module> piece) {
            Part part;
            llvm::raw_svector_ostream os(part.bitcode);
            llvm::WriteBitcodeToFile(*piece, os);
            parts.push_back(std::move(part));
          },
          /*PreserveLocals=*/false);
      module.reset();
      if (!cacheDir.empty())
        for (Part &part : parts)
          part.cachePath =
              cachePathFor(cacheDir, part.bitcode, options, **machine);
    }
    TimedPhase phase(llvm::formatv("LLVM opt + codegen ({0} parts, {1} "
                                   "threads)",
                                   parts.size(), threads)
                         .str());
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(threads));
    for (Part &part : parts) {
      if (readCached(part))
        continue;
      pool.async([&part, &options] {
        llvm::LLVMContext context;
        llvm::Expected<std::unique_ptr<llvm::Module>> piece =
            llvm::parseBitcodeFile(
                llvm::MemoryBufferRef(
                    StringRef(part.bitcode.data(), part.bitcode.size()),
                    "part"),
                context);
        if (!piece) {
          part.error = "cannot read back a split module part: " +
                       llvm::toString(piece.takeError());
          return;
        }
        if (llvm::Error error = optimizeAndEmit(**piece, options, part.object,
                                                /*timed=*/false)) {
          part.error = llvm::toString(std::move(error));
          return;
        }
        writeCached(part);
      });
    }
    pool.wait();
    for (Part &part : parts) {
      if (!part.error.empty())
        return llvm::createStringError(part.error);
      objects.push_back(std::move(part.object));
    }
  }
  if (!cacheDir.empty()) {
    // At most 2 GiB and a week unused (checked at most every hour).
    if (auto policy = llvm::parseCachePruningPolicy(
            "prune_interval=1h:prune_after=168h:cache_size_bytes=2g"))
      llvm::pruneCache(cacheDir, *policy);
    else
      llvm::consumeError(policy.takeError());
  }
  return llvm::Error::success();
}

} // namespace pipedream::cpu
