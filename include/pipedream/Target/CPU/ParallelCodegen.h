//===- ParallelCodegen.h - LLVM opt + codegen on all cores ------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The LLVM half of the CPU code generator, made to scale (issue 16): the
// translated module is split (llvm::SplitModule, locals externalized as
// hidden symbols) into one part per thread; every part is optimized and
// compiled to an object in its own LLVMContext on a thread pool. Objects are
// cached on disk by a hash of the part's bitcode and everything else that
// decides the object (target, CPU, features, -O, LLVM version, this
// compiler's binary), so compiling an unchanged part again costs a file read.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TARGET_CPU_PARALLELCODEGEN_H
#define PIPEDREAM_TARGET_CPU_PARALLELCODEGEN_H

#include "pipedream/Target/CPU/CPUCodegen.h"

#include <string>
#include <vector>

namespace pipedream::cpu {

/// The object cache directory `options` selects, or "" when the cache is
/// off: --no-cache (`useCache` false) or PIPEDREAM_NO_CACHE set to anything
/// but "" or "0" turn it off; else `cacheDir`, $PIPEDREAM_CACHE_DIR,
/// $XDG_CACHE_HOME/pipedream, ~/.cache/pipedream, the first that is set.
std::string resolveObjectCacheDir(const CPUCodegenOptions &options);

/// Threads `options.codegenThreads` asks for (0: the hardware's).
unsigned resolveCodegenThreads(const CPUCodegenOptions &options);

/// Optimizes `module` at `options.optLevel` and emits it as ELF objects
/// into `objects` (one per part), on resolveCodegenThreads threads, with
/// the object cache. `module` is consumed (split or optimized in place).
llvm::Error compileToObjects(std::unique_ptr<llvm::Module> module,
                             const CPUCodegenOptions &options,
                             std::vector<llvm::SmallVector<char, 0>> &objects);

} // namespace pipedream::cpu

#endif // PIPEDREAM_TARGET_CPU_PARALLELCODEGEN_H
