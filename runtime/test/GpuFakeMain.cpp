//===- GpuFakeMain.cpp - main of pipedream-gpu-fake-tests -----------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Points the runtime at GpuFakeSupport.cpp's library before anything loads
// a support library, so GpuRuntimeTest.cpp runs without a GPU.
//
//===----------------------------------------------------------------------===//

#include "pipedream/gpu.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
  setenv("PIPEDREAM_GPU_LIBRARY", PIPEDREAM_GPU_FAKE, /*overwrite=*/1);
  if (pd_gpu_device_check() != PD_OK) {
    std::fprintf(stderr, "cannot load the fake GPU library: %s\n",
                 pd_last_error());
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
