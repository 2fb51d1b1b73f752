# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: the sanitizer
# settings of the instrumented build (docs/Fuzzing.md).
#   source scripts/sanitizer-env.sh [LOG_DIR]
# With LOG_DIR, every report goes to LOG_DIR/<tool>.<pid> instead of stderr,
# so one in a process whose stderr a test discards (or that runs under
# `not`) is still seen.
_pd_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_pd_log=""
if [ -n "${1:-}" ]; then
  _pd_log=":log_path=$1/asan"
fi
# abort_on_error: a report ends the process with SIGABRT, which `not`
# (without --crash) counts as a failure, not as the expected error exit.
# fast_unwind_on_malloc=0: Open MPI's leaks (fuzz/sanitizer/lsan.supp) come
# from components it unloads at MPI_Finalize; only the slow unwinder's
# deeper stacks reach a frame the suppressions can name.
# allow_user_poisoning=0: LLVM's headers poison and unpoison
# BumpPtrAllocator slabs (llvm/Support/Allocator.h, Recycler.h) only where
# the including file is compiled with ASan. Our instrumented code and
# Debian's uninstrumented libMLIR share allocators (a StorageUniquer's
# slabs): a slab our inline code started is poisoned whole, libMLIR's
# inline code hands out pieces of it without unpoisoning, and the next
# memmove into them is a false "use-after-poison" (Dialect/Pipe/ops.mlir,
# ScheduleAttr storage). Nothing else of ours poisons memory by hand.
export ASAN_OPTIONS="allow_user_poisoning=0:fast_unwind_on_malloc=0:abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1${_pd_log}${PIPEDREAM_ASAN_OPTIONS:+:$PIPEDREAM_ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1${1:+:log_path=$1/ubsan}"
export LSAN_OPTIONS="suppressions=$_pd_root/fuzz/sanitizer/lsan.supp:print_suppressions=0"
unset _pd_root _pd_log
