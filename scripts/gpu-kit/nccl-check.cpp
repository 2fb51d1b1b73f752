//===- nccl-check.cpp - NCCL on one GPU, as the runtime uses it -----------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The GPU kit's NCCL check (scripts/gpu-kit.sh, docs/GPU.md). NCCL refuses
// two ranks on one GPU, so this runs one rank and checks the calls the
// runtime's NCCL transport (runtime/lib/TransportNccl.cpp) makes:
//   1. ncclSend + ncclRecv to itself inside ncclGroupStart/End (the
//      transport's grouped point-to-point messages), 1 MiB and 257 floats;
//   2. ncclAllReduce(ncclSum) in place, f32 and f64 (pd_transport_all_reduce:
//      tied weights' gradients), whose one-rank sum must equal the input;
//   3. ncclCommGetAsyncError after each, then ncclCommFinalize/Destroy.
// Prints one line per check and `nccl-check: OK` or exits 1 naming the
// failed call. Exits 77 with `no CUDA device: ...` when there is none.
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

bool cudaOk(cudaError_t e, const char *call) {
  if (e == cudaSuccess)
    return true;
  std::printf("FAIL %s: %s (%s)\n", call, cudaGetErrorString(e),
              cudaGetErrorName(e));
  return false;
}

bool ncclOk(ncclResult_t r, const char *call) {
  if (r == ncclSuccess)
    return true;
  std::printf("FAIL %s: %s (ncclResult %d)\n", call, ncclGetErrorString(r),
              int(r));
  return false;
}

bool asyncOk(ncclComm_t comm, const char *what) {
  ncclResult_t async = ncclSuccess;
  if (!ncclOk(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError"))
    return false;
  if (async != ncclSuccess) {
    std::printf("FAIL %s: asynchronous error %s\n", what,
                ncclGetErrorString(async));
    return false;
  }
  return true;
}

template <typename T>
bool sendRecvSelf(ncclComm_t comm, cudaStream_t stream, size_t count,
                  ncclDataType_t type) {
  std::vector<T> host(count), back(count);
  for (size_t i = 0; i < count; ++i)
    host[i] = T(0.5) * T(i % 4099) - T(7);
  void *send = nullptr, *recv = nullptr;
  size_t bytes = count * sizeof(T);
  if (!cudaOk(cudaMalloc(&send, bytes), "cudaMalloc") ||
      !cudaOk(cudaMalloc(&recv, bytes), "cudaMalloc") ||
      !cudaOk(cudaMemcpy(send, host.data(), bytes, cudaMemcpyHostToDevice),
              "cudaMemcpy") ||
      !cudaOk(cudaMemset(recv, 0, bytes), "cudaMemset"))
    return false;
  bool ok = ncclOk(ncclGroupStart(), "ncclGroupStart") &&
            ncclOk(ncclSend(send, count, type, 0, comm, stream), "ncclSend") &&
            ncclOk(ncclRecv(recv, count, type, 0, comm, stream), "ncclRecv") &&
            ncclOk(ncclGroupEnd(), "ncclGroupEnd") &&
            cudaOk(cudaStreamSynchronize(stream), "cudaStreamSynchronize") &&
            asyncOk(comm, "send/recv") &&
            cudaOk(cudaMemcpy(back.data(), recv, bytes, cudaMemcpyDeviceToHost),
                   "cudaMemcpy");
  cudaFree(send);
  cudaFree(recv);
  if (!ok)
    return false;
  if (std::memcmp(back.data(), host.data(), bytes) != 0) {
    std::printf("FAIL send/recv to self of %zu elements: data differ\n",
                count);
    return false;
  }
  std::printf("OK send/recv to self in a group, %zu bytes\n", bytes);
  return true;
}

template <typename T>
bool allReduceOneRank(ncclComm_t comm, cudaStream_t stream, size_t count,
                      ncclDataType_t type, const char *name) {
  std::vector<T> host(count), back(count);
  for (size_t i = 0; i < count; ++i)
    host[i] = T(1) / T(1 + i % 97) - T(0.25);
  void *data = nullptr;
  size_t bytes = count * sizeof(T);
  bool ok =
      cudaOk(cudaMalloc(&data, bytes), "cudaMalloc") &&
      cudaOk(cudaMemcpy(data, host.data(), bytes, cudaMemcpyHostToDevice),
             "cudaMemcpy") &&
      // In place, as TransportNccl.cpp calls it.
      ncclOk(ncclAllReduce(data, data, count, type, ncclSum, comm, stream),
             "ncclAllReduce") &&
      cudaOk(cudaStreamSynchronize(stream), "cudaStreamSynchronize") &&
      asyncOk(comm, "ncclAllReduce") &&
      cudaOk(cudaMemcpy(back.data(), data, bytes, cudaMemcpyDeviceToHost),
             "cudaMemcpy");
  cudaFree(data);
  if (!ok)
    return false;
  if (std::memcmp(back.data(), host.data(), bytes) != 0) {
    std::printf("FAIL ncclAllReduce(sum, %s) over one rank changed the data\n",
                name);
    return false;
  }
  std::printf("OK ncclAllReduce(sum, %s) in place over one rank, %zu bytes\n",
              name, bytes);
  return true;
}

} // namespace

int main() {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: cudaGetDeviceCount: %s\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77;
  }
  int version = 0;
  ncclGetVersion(&version);
  std::printf("nccl %d (header %d.%d.%d), %d device(s)\n", version,
              NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, devices);
  if (!cudaOk(cudaSetDevice(0), "cudaSetDevice"))
    return 1;
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  if (!ncclOk(ncclGetUniqueId(&id), "ncclGetUniqueId") ||
      !ncclOk(ncclCommInitRank(&comm, 1, id, 0), "ncclCommInitRank"))
    return 1;
  cudaStream_t stream = nullptr;
  if (!cudaOk(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
              "cudaStreamCreate"))
    return 1;
  bool ok = sendRecvSelf<float>(comm, stream, 257, ncclFloat32) &&
            sendRecvSelf<float>(comm, stream, 1 << 18, ncclFloat32) &&
            allReduceOneRank<float>(comm, stream, 1 << 16, ncclFloat32,
                                    "f32") &&
            allReduceOneRank<double>(comm, stream, 4097, ncclFloat64, "f64");
  if (ok)
    ok = ncclOk(ncclCommFinalize(comm), "ncclCommFinalize");
  ncclCommDestroy(comm);
  cudaStreamDestroy(stream);
  std::printf(ok ? "nccl-check: OK\n" : "nccl-check: FAILED\n");
  return ok ? 0 : 1;
}
