/*===- CApiTest.c - the runtime used from plain C ------------------------===*\
|*                                                                          *|
|* Part of the pipedream project.                                           *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/
/*
 * Checks that pipedream/runtime.h is a C header and that a C program can
 * open a bundle, run a function and read its result:
 *   pipedream-runtime-capi-test PATH/TO/pipedream-test-program.so
 * (the bundle is written into a temporary directory).
 */

#define _XOPEN_SOURCE 700

#include "pipedream/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__,  \
              __LINE__, #cond, pd_last_error());                               \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

static int writeFile(const char *path, const void *data, size_t size) {
  FILE *file = fopen(path, "wb");
  if (!file)
    return 0;
  int ok = fwrite(data, 1, size, file) == size;
  return fclose(file) == 0 && ok;
}

static const char kManifest[] =
    "{\"format\": \"pipedream-bundle\", \"version\": 2,"
    " \"library\": \"program.so\", \"weights_file\": \"weights.bin\","
    " \"weights\": [{\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [2, 3],"
    "               \"offset\": 0, \"bytes\": 24}],"
    " \"functions\": [{\"name\": \"main\", \"symbol\": \"pipedream_main\","
    "   \"kind\": \"inference\", \"buffers\": ["
    "   {\"name\": \"x\", \"role\": \"input\", \"dtype\": \"f32\", \"shape\": [2, 3]},"
    "   {\"name\": \"w\", \"role\": \"weight\", \"dtype\": \"f32\", \"shape\": [2, 3]},"
    "   {\"name\": \"y\", \"role\": \"output\", \"dtype\": \"f32\", \"shape\": [2, 3]}]}]}";

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PROGRAM.so\n", argv[0]);
    return 2;
  }

  /* Errors come back as a status and a message, never an abort. */
  pd_bundle *bundle = NULL;
  CHECK(pd_bundle_open("/nonexistent/bundle", &bundle) == PD_ERROR_IO);
  CHECK(bundle == NULL);
  CHECK(strstr(pd_last_error(), "/nonexistent/bundle") != NULL);
  CHECK(pd_dtype_size(PD_DTYPE_I64) == 8);
  CHECK(strcmp(pd_dtype_name(PD_DTYPE_BF16), "bf16") == 0);

  char dir[] = "/tmp/pd-capi-test-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  char path[4096];
  float w[6] = {1, 2, 3, 4, 5, 6};
  snprintf(path, sizeof(path), "%s/bundle.json", dir);
  CHECK(writeFile(path, kManifest, strlen(kManifest)));
  snprintf(path, sizeof(path), "%s/weights.bin", dir);
  CHECK(writeFile(path, w, sizeof(w)));
  snprintf(path, sizeof(path), "%s/program.so", dir);
  char program[4096];
  CHECK(realpath(argv[1], program) != NULL);
  CHECK(symlink(program, path) == 0);

  CHECK(pd_bundle_open(dir, &bundle) == PD_OK);
  if (bundle) {
    pd_function *main_fn = NULL;
    pd_buffer *x = NULL, *y = NULL;
    CHECK(pd_function_lookup(bundle, "main", &main_fn) == PD_OK);
    CHECK(pd_function_find_buffer(main_fn, "x", &x) == PD_OK);
    CHECK(pd_function_find_buffer(main_fn, "y", &y) == PD_OK);
    float in[6] = {1, 1, 1, 2, 2, 2}, out[6] = {0};
    int64_t shape[2] = {2, 3};
    CHECK(pd_buffer_write(x, PD_DTYPE_F32, 2, shape, in, sizeof(in)) == PD_OK);
    CHECK(pd_function_run(main_fn) == PD_OK);
    CHECK(pd_buffer_read(y, PD_DTYPE_F32, 2, shape, out, sizeof(out)) ==
          PD_OK);
    for (int i = 0; i < 6; ++i)
      CHECK(out[i] == in[i] * w[i] + 1.0f);
    /* The training API from C: an inference bundle has no trainer. */
    pd_trainer *trainer = NULL;
    CHECK(pd_bundle_is_training(bundle) == 0);
    CHECK(pd_trainer_create(bundle, &trainer) == PD_ERROR_UNSUPPORTED);
    CHECK(trainer == NULL);
    pd_named_array array = {"x", PD_DTYPE_F32, 2, shape, in, sizeof(in)};
    CHECK(pd_trainer_step(trainer, &array, 1, 0, NULL) ==
          PD_ERROR_INVALID_ARGUMENT);
    pd_bundle_close(bundle);
  }

  snprintf(path, sizeof(path), "%s/program.so", dir);
  unlink(path);
  snprintf(path, sizeof(path), "%s/weights.bin", dir);
  unlink(path);
  snprintf(path, sizeof(path), "%s/bundle.json", dir);
  unlink(path);
  rmdir(dir);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("C API test passed\n");
  return 0;
}
