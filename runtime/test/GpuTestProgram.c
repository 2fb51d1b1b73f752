/*===- GpuTestProgram.c - a hand-written cuda bundle library --------------===*\
|*                                                                          *|
|* Part of the pipedream project.                                           *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/
/*
 * A `"target": "cuda"` bundle library without the compiler, for
 * GpuDeviceTest.cpp: each cuda_<symbol> takes DEVICE pointers (checked),
 * copies them to the host with mgpuMemcpy on mgpuStreamCreate()'s stream,
 * runs TestProgram.c's <symbol> there and copies everything back. Like a
 * compiled cuda program.so it leaves mgpu* and pd_gpu_* undefined: they
 * resolve to libpipedream_gpu.so, which the runtime loads RTLD_GLOBAL
 * first. Because the arithmetic is TestProgram.c's, a cuda bundle of it
 * must match the CPU bundle bitwise: what is tested is the runtime's
 * device buffers, uploads, downloads, `updates` swaps and pipelines.
 *
 * Covered: the linear chain of K = 2 stages (PipelineUtil.h) as stage
 * functions and as the fused training step, and `fail`, which reports an
 * error through pd_gpu_record_error, and `lookup`, which fails run-time
 * checks through a device status record the way a compiled cuda bundle
 * does. Also the native rank entries
 * `gpu_chain_gpipe_rank0/1` (RankEntry.h) of chainRanks(2, "gpipe"),
 * written by hand, so the runtime's native path for cuda bundles (device
 * register table, call_begin/call_end translating bound buffers) runs
 * without the compiler.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

void *mgpuStreamCreate(void);
void mgpuStreamSynchronize(void *stream);
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
int pd_gpu_pointer_is_device(const void *pointer);
void pd_gpu_record_error(const char *message);
void *mgpuMemAlloc(uint64_t bytes, void *stream, bool isHostShared);
void mgpuMemFree(void *pointer, void *stream);

enum { kMaxArguments = 16 };

static void shim(void (*cpu)(void **), void **device, const size_t *sizes,
                 int count) {
  void *host[kMaxArguments];
  void *stream = mgpuStreamCreate();
  for (int i = 0; i < count; ++i)
    if (!pd_gpu_pointer_is_device(device[i])) {
      pd_gpu_record_error("cuda test program: an argument is not device "
                          "memory");
      return;
    }
  for (int i = 0; i < count; ++i) {
    host[i] = malloc(sizes[i]);
    mgpuMemcpy(host[i], device[i], sizes[i], stream);
  }
  mgpuStreamSynchronize(stream);
  cpu(host);
  for (int i = 0; i < count; ++i)
    mgpuMemcpy(device[i], host[i], sizes[i], stream);
  mgpuStreamSynchronize(stream);
  for (int i = 0; i < count; ++i)
    free(host[i]);
}

/* Byte sizes of the arguments, in manifest order. */
#define SHIM(symbol, ...)                                                      \
  void symbol(void **buffers);                                                 \
  EXPORT void cuda_##symbol(void **device) {                                   \
    static const size_t sizes[] = {__VA_ARGS__};                               \
    shim(symbol, device, sizes, (int)(sizeof(sizes) / sizeof(sizes[0])));     \
  }

/* Mid stage 0: h, W0 -> out, res; res, dout, W0, grad:W0 -> din, grad';
   W0, grad:W0, momentum -> W0', momentum'. */
SHIM(pipedream_chain_mid_F0, 16, 16, 16, 16)
SHIM(pipedream_chain_mid_B0, 16, 16, 16, 16, 16, 16)
SHIM(pipedream_chain_mid_U0, 16, 16, 16, 16, 16)
/* Last stage: h, y, w -> loss, res, err; res, err, w, grad:w -> dh, grad';
   w, grad:w, momentum -> w', momentum'. */
SHIM(pipedream_chain_last_F, 16, 8, 8, 4, 16, 8)
SHIM(pipedream_chain_last_B, 16, 8, 8, 8, 16, 8)
SHIM(pipedream_chain_last_U, 8, 8, 8, 8, 8)
/* Fused K = 2: x, y, W0, w, grad:W0, grad:w -> loss, grad:W0', grad:w';
   W0, w, grad:W0, grad:w, momentum:W0, momentum:w -> W0', w', momentum'. */
SHIM(pipedream_chain_train2, 16, 8, 16, 8, 16, 8, 4, 16, 8)
SHIM(pipedream_chain_update2, 16, 8, 16, 8, 16, 8, 16, 8, 16, 8)

EXPORT void cuda_fail(void **device) {
  (void)device;
  pd_gpu_record_error("cuda test program: failing on purpose");
}

/* The run-time status channel of a compiled cuda bundle (docs/Bundle.md
   "Run-time checks"; cuda-lower-run-time-checks, cuda-define-run-time-
   status), written out in C for a function `lookup` with one input, idx
   i64[4], and two checks on it: Gather [-61, 61) and GatherElements
   [-3, 3). The device record is five i64 in device memory (failed, value,
   lower, upper, check id); the checks' single-thread kernels are emulated
   by host code that stores into it with mgpuMemcpy; the host half copies
   it back and fills program.so's thread-local record (runtime/lib/
   Bundle.h CheckRecord), which the runtime decodes. */
typedef struct {
  int64_t failed, value, lower, upper;
  const char *info;
} check_record;
static _Thread_local check_record run_time_status;
static const char *const kCheckInfo[2] = {"Gather\0/tok/Gather\0idx",
                                          "GatherElements\0/g\0indices"};
static const int64_t kCheckBounds[2][2] = {{-61, 61}, {-3, 3}};

/* Like compiled code (LLVM emits no -fsanitize=function signature), so the
   runtime's call through CheckRecordAccessor is not checked against this
   C declaration's type. */
__attribute__((no_sanitize("function"))) EXPORT check_record *
pipedream_run_time_status(void) {
  return &run_time_status;
}

/* pipedream.cuda_take_run_time_status: the device record to the host; the
   thread's record filled from it when still empty, with the names of the
   check whose id it holds. */
static void take_run_time_status(int64_t *device_record, void *stream) {
  int64_t host[5];
  mgpuMemcpy(host, device_record, sizeof(host), stream);
  mgpuStreamSynchronize(stream);
  if (host[0] != 0 && run_time_status.failed == 0) {
    run_time_status.failed = host[0];
    run_time_status.value = host[1];
    run_time_status.lower = host[2];
    run_time_status.upper = host[3];
    run_time_status.info = kCheckInfo[host[4] == 1 ? 1 : 0];
  }
}

EXPORT void cuda_lookup(void **device) {
  void *stream = mgpuStreamCreate();
  if (!pd_gpu_pointer_is_device(device[0])) {
    pd_gpu_record_error("cuda test program: an argument is not device "
                        "memory");
    return;
  }
  int64_t *record = (int64_t *)mgpuMemAlloc(5 * sizeof(int64_t), stream, 0);
  int64_t zero[5] = {0, 0, 0, 0, 0};
  mgpuMemcpy(record, zero, sizeof(zero), stream);
  /* The reduction's min and max of the indices. */
  int64_t idx[4];
  mgpuMemcpy(idx, device[0], sizeof(idx), stream);
  mgpuStreamSynchronize(stream);
  int64_t lo = idx[0], hi = idx[0];
  for (int i = 1; i < 4; ++i) {
    lo = idx[i] < lo ? idx[i] : lo;
    hi = idx[i] > hi ? idx[i] : hi;
  }
  /* Each check's kernel: the first failing check writes the record. */
  for (int64_t c = 0; c < 2; ++c) {
    int64_t current[5];
    mgpuMemcpy(current, record, sizeof(current), stream);
    mgpuStreamSynchronize(stream);
    int low = lo < kCheckBounds[c][0], high = hi >= kCheckBounds[c][1];
    if ((low || high) && current[0] == 0) {
      int64_t fields[5] = {1, high ? hi : lo, kCheckBounds[c][0],
                           kCheckBounds[c][1], c};
      mgpuMemcpy(record, fields, sizeof(fields), stream);
    }
  }
  take_run_time_status(record, stream);
  mgpuMemFree(record, stream);
}

/* Native rank entries (runtime/lib/RankEntry.h, version 1) of the chain's
   K = 2 gpipe programs, M = 4 micro-batches (PipelineUtil.h chainRanks):
   instruction and register numbers are that program's. */
/* The tag and the integer types are RankEntry.h's: the entries are called
   through pd_rank_entry, and UBSan (-fsanitize=function) checks the type. */
typedef struct pd_rank_context rank_context;
typedef struct {
  int (*input)(rank_context *ctx, int64_t instruction, void *dst);
  int (*call_begin)(rank_context *ctx, int64_t instruction, void **buffers);
  int (*call_end)(rank_context *ctx, int64_t instruction);
  int (*send)(rank_context *ctx, int64_t instruction, int64_t peer,
              int64_t tag, const void *data, int64_t bytes);
  int (*recv)(rank_context *ctx, int64_t instruction, int64_t peer,
              int64_t tag, void *data, int64_t bytes);
  int (*loss)(rank_context *ctx, int64_t instruction, int64_t microbatch,
              const void *value);
} rank_runtime;
struct pd_rank_context {
  const rank_runtime *runtime;
};

void cuda_pipedream_chain_mid_F0(void **device);
void cuda_pipedream_chain_mid_B0(void **device);
void cuda_pipedream_chain_mid_U0(void **device);
void cuda_pipedream_chain_last_F(void **device);
void cuda_pipedream_chain_last_B(void **device);
void cuda_pipedream_chain_last_U(void **device);

#define CHECK(call)                                                            \
  do {                                                                         \
    int status_ = (call);                                                      \
    if (status_ != 0)                                                          \
      return status_;                                                          \
  } while (0)

/* Runs stage function `fn` for instruction `ins` on `buffers` (value slots
   set by the caller). */
static int call(rank_context *ctx, int64_t ins, void (*fn)(void **),
                void **buffers) {
  CHECK(ctx->runtime->call_begin(ctx, ins, buffers));
  fn(buffers);
  return ctx->runtime->call_end(ctx, ins);
}

EXPORT int gpu_chain_gpipe_rank0(rank_context *ctx, void **r) {
  const rank_runtime *rt = ctx->runtime;
  for (int m = 0; m < 4; ++m) {
    /* h = 3m, out = 3m+1, res = 3m+2; instructions 3m .. 3m+2. */
    CHECK(rt->input(ctx, 3 * m, r[3 * m]));
    void *f[4] = {r[3 * m], NULL, r[3 * m + 1], r[3 * m + 2]};
    CHECK(call(ctx, 3 * m + 1, cuda_pipedream_chain_mid_F0, f));
    CHECK(rt->send(ctx, 3 * m + 2, 1, 2 * m, r[3 * m + 1], 16));
  }
  for (int m = 0; m < 4; ++m) {
    /* din = 12+2m, dout = 13+2m; instructions 12+2m, 13+2m. */
    CHECK(rt->recv(ctx, 12 + 2 * m, 1, 2 * m + 1, r[13 + 2 * m], 16));
    void *b[6] = {r[3 * m + 2], r[13 + 2 * m], NULL, NULL, r[12 + 2 * m],
                  NULL};
    CHECK(call(ctx, 13 + 2 * m, cuda_pipedream_chain_mid_B0, b));
  }
  void *u[5] = {NULL, NULL, NULL, NULL, NULL};
  return call(ctx, 20, cuda_pipedream_chain_mid_U0, u);
}

EXPORT int gpu_chain_gpipe_rank1(rank_context *ctx, void **r) {
  const rank_runtime *rt = ctx->runtime;
  for (int m = 0; m < 4; ++m) {
    /* h = 5m, y, loss, res, err = 5m+1 .. 5m+4; instructions 4m .. 4m+3. */
    CHECK(rt->recv(ctx, 4 * m, 0, 2 * m, r[5 * m], 16));
    CHECK(rt->input(ctx, 4 * m + 1, r[5 * m + 1]));
    void *f[6] = {r[5 * m], r[5 * m + 1], NULL, r[5 * m + 2], r[5 * m + 3],
                  r[5 * m + 4]};
    CHECK(call(ctx, 4 * m + 2, cuda_pipedream_chain_last_F, f));
    CHECK(rt->loss(ctx, 4 * m + 3, m, r[5 * m + 2]));
  }
  for (int m = 0; m < 4; ++m) {
    /* din = 20+m; instructions 16+2m, 17+2m. */
    void *b[6] = {r[5 * m + 3], r[5 * m + 4], NULL, NULL, r[20 + m], NULL};
    CHECK(call(ctx, 16 + 2 * m, cuda_pipedream_chain_last_B, b));
    CHECK(rt->send(ctx, 17 + 2 * m, 0, 2 * m + 1, r[20 + m], 16));
  }
  void *u[5] = {NULL, NULL, NULL, NULL, NULL};
  return call(ctx, 24, cuda_pipedream_chain_last_U, u);
}
