/*===- embed.c - run a compiled bundle from a C program ------------------===*\
|*                                                                          *|
|* Part of the pipedream project.                                           *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/
/*
 * pipedream-embed BUNDLE_DIR [STEPS] [CHECKPOINT_DIR]
 *
 * Opens a bundle written by pipedream-compile and
 *  - for a training bundle: trains STEPS (default 3) optimizer steps on
 *    synthetic data made to the bundle's input shapes (float inputs in
 *    [-1, 1), class labels in [0, num_classes) or float targets), printing
 *    each step's loss, then saves a checkpoint into CHECKPOINT_DIR if given;
 *  - for an inference bundle: runs its `main` (or only inference) function
 *    on such inputs and prints the first output's first values.
 * Everything goes through the C API of pipedream/runtime.h; this file is
 * the "embed the runtime in a deployment binary" example (docs/Runtime.md).
 */

#include "pipedream/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed(const char *what) {
  fprintf(stderr, "error: %s: %s\n", what, pd_last_error());
  return 1;
}

/* Deterministic pseudo-random numbers (no rand() state shared with anyone). */
static unsigned long long state = 88172645463325252ull;
static double next_uniform(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return (double)(state >> 11) / 9007199254740992.0;
}

/* Fills `count` elements of `dtype` at `data`: classes in [0, classes) for
 * integer buffers when classes > 0, else values in [-1, 1). */
static void fill(void *data, pd_dtype dtype, size_t count, int64_t classes) {
  size_t i;
  for (i = 0; i < count; ++i) {
    double u = next_uniform();
    switch (dtype) {
    case PD_DTYPE_F32: ((float *)data)[i] = (float)(2 * u - 1); break;
    case PD_DTYPE_F64: ((double *)data)[i] = 2 * u - 1; break;
    case PD_DTYPE_I64:
      ((int64_t *)data)[i] = classes > 0 ? (int64_t)(u * classes) : 0;
      break;
    case PD_DTYPE_I32:
      ((int32_t *)data)[i] = classes > 0 ? (int32_t)(u * classes) : 0;
      break;
    default: memset((char *)data + i * pd_dtype_size(dtype), 0,
                    pd_dtype_size(dtype));
    }
  }
}

static int train(pd_bundle *bundle, int steps, const char *checkpoint_dir) {
  pd_trainer *trainer;
  pd_function *step_fn = pd_bundle_training_step_function(bundle);
  size_t inputs = pd_bundle_training_input_count(bundle);
  size_t batch, count = 0, k;
  /* One array per training input plus the labels, each two batches long. */
  pd_named_array arrays[16];
  int64_t shapes[16][8];
  void *data[16];
  int s, status = 0;
  if (pd_trainer_create(bundle, &trainer) != PD_OK)
    return failed("pd_trainer_create");
  batch = pd_trainer_batch_size(trainer);
  if (inputs + 1 > 16)
    return fprintf(stderr, "error: too many inputs\n"), 1;
  for (k = 0; k <= inputs; ++k) {
    const char *name = k < inputs ? pd_bundle_training_input_at(bundle, k)
                                  : pd_bundle_training_labels(bundle);
    pd_buffer *buffer;
    size_t rank, d, elements;
    if (pd_function_find_buffer(step_fn, name, &buffer) != PD_OK)
      return failed("pd_function_find_buffer");
    rank = pd_buffer_rank(buffer);
    if (rank == 0 || rank > 8)
      return fprintf(stderr, "error: input '%s' has rank %zu\n", name, rank), 1;
    /* The step function takes one micro-batch; the data holds 2 batches. */
    shapes[k][0] = (int64_t)(2 * batch);
    elements = 2 * batch;
    for (d = 1; d < rank; ++d) {
      shapes[k][d] = pd_buffer_shape(buffer)[d];
      elements *= (size_t)shapes[k][d];
    }
    data[k] = malloc(elements * pd_dtype_size(pd_buffer_dtype(buffer)) + 1);
    fill(data[k], pd_buffer_dtype(buffer), elements,
         k == inputs ? pd_bundle_training_num_classes(bundle) : 0);
    arrays[k].name = name;
    arrays[k].dtype = pd_buffer_dtype(buffer);
    arrays[k].rank = rank;
    arrays[k].shape = shapes[k];
    arrays[k].data = data[k];
    arrays[k].num_bytes = elements * pd_dtype_size(pd_buffer_dtype(buffer));
    ++count;
  }
  printf("bundle %s: model '%s', %zu samples per step, %zu micro-batches\n",
         pd_bundle_dir(bundle), pd_bundle_model(bundle), batch,
         pd_bundle_training_microbatches(bundle));
  for (s = 0; s < steps && status == 0; ++s) {
    double loss;
    if (pd_trainer_step(trainer, arrays, count, (uint64_t)s * batch, &loss) !=
        PD_OK)
      status = failed("pd_trainer_step");
    else
      printf("step %d loss %.6f\n", s + 1, loss);
  }
  if (status == 0 && checkpoint_dir) {
    if (pd_trainer_save_checkpoint(trainer, checkpoint_dir, (uint64_t)steps) !=
        PD_OK)
      status = failed("pd_trainer_save_checkpoint");
    else
      printf("checkpoint of step %d in %s\n", steps, checkpoint_dir);
  }
  for (k = 0; k < count; ++k)
    free(data[k]);
  pd_trainer_destroy(trainer);
  return status;
}

static int infer(pd_bundle *bundle) {
  pd_function *fn = NULL;
  size_t i, n = pd_bundle_function_count(bundle);
  for (i = 0; i < n && !fn; ++i) {
    pd_function *f = pd_bundle_function_at(bundle, i);
    if (strcmp(pd_function_kind(f), "inference") == 0)
      fn = f;
  }
  if (!fn)
    return fprintf(stderr, "error: no inference function\n"), 1;
  for (i = 0; i < pd_function_buffer_count(fn); ++i) {
    pd_buffer *b = pd_function_buffer_at(fn, i);
    if (pd_buffer_role(b) == PD_ROLE_INPUT)
      fill(pd_buffer_data(b), pd_buffer_dtype(b), pd_buffer_num_elements(b), 0);
  }
  if (pd_function_run(fn) != PD_OK)
    return failed("pd_function_run");
  for (i = 0; i < pd_function_buffer_count(fn); ++i) {
    pd_buffer *b = pd_function_buffer_at(fn, i);
    if (pd_buffer_role(b) == PD_ROLE_OUTPUT &&
        pd_buffer_dtype(b) == PD_DTYPE_F32) {
      const float *y = pd_buffer_const_data(b);
      printf("%s: %zu values, first %.6f\n", pd_buffer_name(b),
             pd_buffer_num_elements(b), y[0]);
      break;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  pd_bundle *bundle;
  int steps = argc > 2 ? atoi(argv[2]) : 3, status;
  if (argc < 2 || steps <= 0) {
    fprintf(stderr, "usage: %s BUNDLE_DIR [STEPS] [CHECKPOINT_DIR]\n", argv[0]);
    return 2;
  }
  printf("pipedream runtime API %d\n", pd_runtime_api_version());
  if (pd_bundle_open(argv[1], &bundle) != PD_OK)
    return failed("pd_bundle_open");
  status = pd_bundle_is_training(bundle)
               ? train(bundle, steps, argc > 3 ? argv[3] : NULL)
               : infer(bundle);
  pd_bundle_close(bundle);
  return status;
}
