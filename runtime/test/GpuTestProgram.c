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
 * error through pd_gpu_record_error.
 */

#include <stddef.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

void *mgpuStreamCreate(void);
void mgpuStreamSynchronize(void *stream);
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
int pd_gpu_pointer_is_device(const void *pointer);
void pd_gpu_record_error(const char *message);

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
