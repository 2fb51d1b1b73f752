/*===- TestProgram.c - a hand-written bundle library for the tests -------===*\
|*                                                                          *|
|* Part of the pipedream project.                                           *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/
/*
 * Implements the entry-point ABI of docs/Bundle.md by hand, so the runtime
 * and pipedream-run are tested without the MLIR compiler:
 *
 *   main:    x f32[2x3] (input), w f32[2x3] (weight) -> y f32[2x3] = x*w + 1
 *   affine:  x f32[2x3], w f32[2x3], b f32[3] (weights)
 *              -> y f32[2x3] = x*w + b (b broadcast over rows),
 *                 aligned i1[] = every buffer pointer is 64-byte aligned
 *   twice:   n i32[4] (input) -> m i64[4] = 2*n
 *   bf16:    a bf16[4] (input) -> f f32[4] = a widened to f32,
 *                                 neg bf16[4] = -a (sign bit flipped)
 */

#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT void pipedream_main(void **buffers) {
  const float *x = (const float *)buffers[0];
  const float *w = (const float *)buffers[1];
  float *y = (float *)buffers[2];
  for (int i = 0; i < 6; ++i)
    y[i] = x[i] * w[i] + 1.0f;
}

EXPORT void pipedream_affine(void **buffers) {
  const float *x = (const float *)buffers[0];
  const float *w = (const float *)buffers[1];
  const float *b = (const float *)buffers[2];
  float *y = (float *)buffers[3];
  unsigned char *aligned = (unsigned char *)buffers[4];
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c)
      y[r * 3 + c] = x[r * 3 + c] * w[r * 3 + c] + b[c];
  int ok = 1;
  for (int i = 0; i < 5; ++i)
    ok &= ((uintptr_t)buffers[i] % 64) == 0;
  *aligned = (unsigned char)ok;
}

EXPORT void pipedream_twice(void **buffers) {
  const int32_t *n = (const int32_t *)buffers[0];
  int64_t *m = (int64_t *)buffers[1];
  for (int i = 0; i < 4; ++i)
    m[i] = 2 * (int64_t)n[i];
}

EXPORT void pipedream_bf16(void **buffers) {
  const uint16_t *a = (const uint16_t *)buffers[0];
  uint32_t *f = (uint32_t *)buffers[1];
  uint16_t *neg = (uint16_t *)buffers[2];
  for (int i = 0; i < 4; ++i) {
    f[i] = (uint32_t)a[i] << 16;
    neg[i] = (uint16_t)(a[i] ^ 0x8000u);
  }
}
