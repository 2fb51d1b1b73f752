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
 * A chain of linear layers for pipeline bundles (docs/Bundle.md "Pipeline
 * bundles"), micro-batches of 2 rows of 2 features, mse, M = 4 (the
 * gradients carry 1/4), SGD with momentum 0.9 and lr 0.1:
 *   h_{s+1} = h_s . W_s (W_s f32[2x2], s < K - 1), pred = h_{K-1} . w
 *   (w f32[2]), loss = mean_r (pred[r] - y[r])^2.
 * Stage functions (s = 0, 1, 2 for the first K - 1 stages, `last` for the
 * last one), each calling the same helpers as the fused single-rank
 * functions, so a pipeline equals single-rank training bitwise:
 *   chain_mid_F<s>:  h f32[2x2] (input), W<s> (weight)
 *                      -> out f32[2x2], res f32[2x2] (= h, a residual)
 *   chain_mid_B<s>:  res, dout f32[2x2] (inputs), W<s> (weight),
 *                    grad:W<s> (grad) -> din f32[2x2], grad:W<s>' (updates)
 *   chain_mid_U<s>:  W<s>, grad:W<s>, momentum_buffer:W<s>
 *                      -> W<s>', momentum_buffer:W<s>' (updates)
 *   chain_last_F:    h f32[2x2], y f32[2] (inputs), w (weight)
 *                      -> loss f32[], res f32[2x2], err f32[2]
 *   chain_last_B:    res, err (inputs), w (weight), grad:w (grad)
 *                      -> dh f32[2x2], grad:w' (updates)
 *   chain_last_U:    w, grad:w, momentum_buffer:w -> w', momentum_buffer:w'
 *   chain_train2 / chain_train4: the fused micro-batch step of the chain of
 *                    K = 2 / 4 stages (x, y, the weights, their grads ->
 *                    loss, the grads'), chain_update2 / chain_update4 the
 *                    fused update (weights, grads, momentum buffers ->
 *                    weights', momentum buffers').
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
#include <string.h>

/* The pipeline tests compare stage functions with fused ones bitwise: no
   fused multiply-adds in one and not the other. */
#pragma STDC FP_CONTRACT OFF

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

/* The evaluation function: the micro-batch's mean squared error. */
EXPORT void pipedream_eval_linear(void **buffers) {
  const float *x = (const float *)buffers[0];
  const float *y = (const float *)buffers[1];
  const float *w = (const float *)buffers[2];
  float *loss = (float *)buffers[3];
  float sum = 0.0f;
  for (int r = 0; r < 2; ++r) {
    float err = -y[r];
    for (int j = 0; j < 3; ++j)
      err += x[r * 3 + j] * w[j];
    sum += err * err;
  }
  *loss = sum / 2.0f;
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

/*===-- The linear chain (pipeline tests) --------------------------------===*/

#define CHAIN_SCALE 0.25f /* 1/M, M = 4 micro-batches */

static void chainMidForward(const float *h, const float *W, float *out) {
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 2; ++j) {
      float sum = 0.0f;
      for (int i = 0; i < 2; ++i)
        sum += h[r * 2 + i] * W[i * 2 + j];
      out[r * 2 + j] = sum;
    }
}

static void chainLastForward(const float *h, const float *y, const float *w,
                             float *loss, float *err) {
  float sum = 0.0f;
  for (int r = 0; r < 2; ++r) {
    float pred = h[r * 2] * w[0] + h[r * 2 + 1] * w[1];
    float e = pred - y[r];
    err[r] = e;
    sum += e * e;
  }
  *loss = sum / 2.0f;
}

/* d loss / d pred[r] = err[r] (2 err / 2 rows), times 1/M for the step. */
static void chainLastBackward(const float *h, const float *err,
                              const float *w, const float *grad, float *dh,
                              float *gradOut) {
  for (int j = 0; j < 2; ++j)
    gradOut[j] = grad[j];
  for (int r = 0; r < 2; ++r) {
    float d = CHAIN_SCALE * err[r];
    for (int j = 0; j < 2; ++j) {
      gradOut[j] += d * h[r * 2 + j];
      dh[r * 2 + j] = d * w[j];
    }
  }
}

static void chainMidBackward(const float *h, const float *dout,
                             const float *W, const float *grad, float *din,
                             float *gradOut) {
  for (int k = 0; k < 4; ++k)
    gradOut[k] = grad[k];
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        gradOut[i * 2 + j] += h[r * 2 + i] * dout[r * 2 + j];
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 2; ++i) {
      float sum = 0.0f;
      for (int j = 0; j < 2; ++j)
        sum += dout[r * 2 + j] * W[i * 2 + j];
      din[r * 2 + i] = sum;
    }
}

static void chainUpdate(int n, const float *w, const float *grad,
                        const float *buf, float *wOut, float *bufOut) {
  for (int j = 0; j < n; ++j) {
    bufOut[j] = 0.9f * buf[j] + grad[j];
    wOut[j] = w[j] - 0.1f * bufOut[j];
  }
}

#define F(i) ((float *)buffers[i])

#define CHAIN_MID(s)                                                           \
  EXPORT void pipedream_chain_mid_F##s(void **buffers) {                       \
    chainMidForward(F(0), F(1), F(2));                                         \
    memcpy(F(3), F(0), 4 * sizeof(float));                                     \
  }                                                                            \
  EXPORT void pipedream_chain_mid_B##s(void **buffers) {                       \
    chainMidBackward(F(0), F(1), F(2), F(3), F(4), F(5));                      \
  }                                                                            \
  EXPORT void pipedream_chain_mid_U##s(void **buffers) {                       \
    chainUpdate(4, F(0), F(1), F(2), F(3), F(4));                              \
  }
CHAIN_MID(0)
CHAIN_MID(1)
CHAIN_MID(2)

EXPORT void pipedream_chain_last_F(void **buffers) {
  chainLastForward(F(0), F(1), F(2), F(3), F(5));
  memcpy(F(4), F(0), 4 * sizeof(float));
}

EXPORT void pipedream_chain_last_B(void **buffers) {
  chainLastBackward(F(0), F(1), F(2), F(3), F(4), F(5));
}

EXPORT void pipedream_chain_last_U(void **buffers) {
  chainUpdate(2, F(0), F(1), F(2), F(3), F(4));
}

/* Buffers: x, y, W_0..W_{n-1}, w, grad:W_0..grad:W_{n-1}, grad:w, loss,
   the grads' in the same order (n = K - 1 middle layers). */
static void chainTrain(void **buffers, int n) {
  float h[4][4], err[2], d[4], din[4];
  memcpy(h[0], F(0), sizeof(h[0]));
  for (int s = 0; s < n; ++s)
    chainMidForward(h[s], F(2 + s), h[s + 1]);
  int grads = 3 + n, loss = 4 + 2 * n, gradsOut = 5 + 2 * n;
  chainLastForward(h[n], F(1), F(2 + n), F(loss), err);
  chainLastBackward(h[n], err, F(2 + n), F(grads + n), d, F(gradsOut + n));
  for (int s = n - 1; s >= 0; --s) {
    chainMidBackward(h[s], d, F(2 + s), F(grads + s), din, F(gradsOut + s));
    memcpy(d, din, sizeof(d));
  }
}

/* Buffers: the n + 1 weights, their grads, their momentum buffers, then the
   weights' and the momentum buffers'. */
static void chainUpdateAll(void **buffers, int n) {
  int k = n + 1;
  for (int s = 0; s < k; ++s)
    chainUpdate(s < n ? 4 : 2, F(s), F(k + s), F(2 * k + s), F(3 * k + s),
                F(4 * k + s));
}

EXPORT void pipedream_chain_train2(void **buffers) { chainTrain(buffers, 1); }
EXPORT void pipedream_chain_train4(void **buffers) { chainTrain(buffers, 3); }
EXPORT void pipedream_chain_update2(void **buffers) {
  chainUpdateAll(buffers, 1);
}
EXPORT void pipedream_chain_update4(void **buffers) {
  chainUpdateAll(buffers, 3);
}

#undef F
