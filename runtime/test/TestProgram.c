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
 *
 * A training bundle (docs/Bundle.md "Training bundles"): a linear model
 * pred = x . w with the mse loss, M = 2 micro-batches of 2 samples:
 *
 *   train_linear:  x f32[2x3] (input), y f32[2] (labels), w f32[3] (weight),
 *                  grad:w f32[3] (grad)
 *                    -> loss f32[] = mean_r (x[r] . w - y[r])^2,
 *                       grad:w' f32[3] = grad:w + dloss/dw / 2
 *                                        (updates grad:w)
 *   update_linear: w f32[3] (weight), grad:w f32[3] (grad),
 *                  momentum_buffer:w f32[3] (state), step f32[] (state)
 *                    -> w' = w - 0.1 * buf', buf' = 0.9 * buf + grad:w,
 *                       step' = step + 1 (each updates its input)
 *                  (torch.optim.SGD(lr=0.1, momentum=0.9))
 *   predict_linear: x f32[2x3] (input), w f32[3] (weight) -> p f32[2] = x . w
 *
 * and a probe of how the trainer slices a batch (2 micro-batches of 2):
 *
 *   train_probe:   x f32[2x3] (input), labels i64[2] (labels),
 *                  seen f32[4x3] (state), calls f32[] (state)
 *                    -> loss f32[] = labels[0] + 10 * labels[1],
 *                       seen' = seen with rows 2k, 2k+1 replaced by x,
 *                               k = calls mod 2 (updates seen),
 *                       calls' = calls + 1 (updates calls)
 *   update_probe:  calls f32[] (state) -> updates f64[] = calls
 *                  (a plain output: which call count the update saw)
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

EXPORT void pipedream_train_linear(void **buffers) {
  const float *x = (const float *)buffers[0];
  const float *y = (const float *)buffers[1];
  const float *w = (const float *)buffers[2];
  const float *grad = (const float *)buffers[3];
  float *loss = (float *)buffers[4];
  float *gradOut = (float *)buffers[5];
  float sum = 0.0f;
  for (int j = 0; j < 3; ++j)
    gradOut[j] = grad[j];
  for (int r = 0; r < 2; ++r) {
    float err = -y[r];
    for (int j = 0; j < 3; ++j)
      err += x[r * 3 + j] * w[j];
    sum += err * err;
    /* d/dw of mean_r err^2 is 2/2 * err * x; the step loss is the mean of
       the 2 micro-batches, hence another 1/2. */
    for (int j = 0; j < 3; ++j)
      gradOut[j] += 0.5f * err * x[r * 3 + j];
  }
  *loss = sum / 2.0f;
}

EXPORT void pipedream_update_linear(void **buffers) {
  const float *w = (const float *)buffers[0];
  const float *grad = (const float *)buffers[1];
  const float *buf = (const float *)buffers[2];
  const float *step = (const float *)buffers[3];
  float *wOut = (float *)buffers[4];
  float *bufOut = (float *)buffers[5];
  float *stepOut = (float *)buffers[6];
  for (int j = 0; j < 3; ++j) {
    /* torch.optim.SGD: the buffer starts as the first gradient (0.9 * 0 + g).
     */
    bufOut[j] = 0.9f * buf[j] + grad[j];
    wOut[j] = w[j] - 0.1f * bufOut[j];
  }
  *stepOut = *step + 1.0f;
}

EXPORT void pipedream_predict_linear(void **buffers) {
  const float *x = (const float *)buffers[0];
  const float *w = (const float *)buffers[1];
  float *p = (float *)buffers[2];
  for (int r = 0; r < 2; ++r)
    p[r] = x[r * 3] * w[0] + x[r * 3 + 1] * w[1] + x[r * 3 + 2] * w[2];
}

EXPORT void pipedream_train_probe(void **buffers) {
  const float *x = (const float *)buffers[0];
  const int64_t *labels = (const int64_t *)buffers[1];
  const float *seen = (const float *)buffers[2];
  const float *calls = (const float *)buffers[3];
  float *loss = (float *)buffers[4];
  float *seenOut = (float *)buffers[5];
  float *callsOut = (float *)buffers[6];
  int k = ((int)*calls) % 2;
  for (int i = 0; i < 12; ++i)
    seenOut[i] = seen[i];
  for (int i = 0; i < 6; ++i)
    seenOut[k * 6 + i] = x[i];
  *loss = (float)labels[0] + 10.0f * (float)labels[1];
  *callsOut = *calls + 1.0f;
}

EXPORT void pipedream_update_probe(void **buffers) {
  const float *calls = (const float *)buffers[0];
  double *out = (double *)buffers[1];
  *out = *calls;
}
