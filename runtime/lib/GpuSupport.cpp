//===- GpuSupport.cpp - CUDA support library (libpipedream_gpu.so) --------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The host functions a `"target": "cuda"` bundle's program.so calls (the
// mgpu* set of MLIR's gpu-to-llvm lowering, signatures as upstream
// mlir/lib/ExecutionEngine/CudaRuntimeWrappers.cpp in MLIR 22, and
// pd_gpu_gemm_f32/bf16), and the device operations of the runtime
// (GpuSupport.h). Everything is on the CUDA *runtime* API (cudart linked
// statically: it finds the driver with dlopen at first use, so nothing here
// needs libcuda to start) and cuBLAS.
//
// Errors: nothing here aborts or prints. The first failing call of a thread
// is recorded ("cuda: cudaLaunchKernel: an illegal memory access was
// encountered (cudaErrorIllegalAddress)"); the runtime takes it after each
// entry-point call and returns it as a pd_status.
//
//===----------------------------------------------------------------------===//

#include "GpuGemm.h"
#include "GpuSupport.h"

#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#define PD_GPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// NOTE: trivially destructible thread state: program.so's destructor
// (mgpuModuleUnload) may run at exit, after thread_local destructors.
constexpr size_t kErrorCapacity = 1024;
thread_local char firstError[kErrorCapacity];
thread_local cudaStream_t threadStream = nullptr;
thread_local cublasHandle_t threadBlas = nullptr;
thread_local int32_t defaultDevice = 0;

void record(const std::string &message) {
  if (firstError[0] != '\0')
    return;
  size_t n = std::min(message.size(), kErrorCapacity - 1);
  std::memcpy(firstError, message.data(), n);
  firstError[n] = '\0';
}

/// Records a failed CUDA call; returns true when it failed.
bool failed(cudaError_t error, const char *call) {
  if (error == cudaSuccess)
    return false;
  record(std::string("cuda: ") + call + ": " + cudaGetErrorString(error) +
         " (" + cudaGetErrorName(error) + ")");
  return true;
}

const char *blasStatusName(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

bool blasFailed(cublasStatus_t status, const char *call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return false;
  record(std::string("cublas: ") + call + ": " + blasStatusName(status));
  return true;
}

/// The calling thread's stream, created on first use (non-blocking, so
/// ranks on threads of one process overlap on one GPU).
cudaStream_t stream() {
  if (!threadStream) {
    cudaStream_t created = nullptr;
    if (failed(cudaSetDevice(defaultDevice), "cudaSetDevice") ||
        failed(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags"))
      return nullptr;
    threadStream = created;
  }
  return threadStream;
}

cublasHandle_t blas() {
  if (!threadBlas) {
    cublasHandle_t handle = nullptr;
    if (blasFailed(cublasCreate(&handle), "cublasCreate"))
      return nullptr;
    threadBlas = handle;
  }
  return threadBlas;
}

/// Managed allocations (mgpuMemAlloc with isHostShared), freed with
/// cudaFree rather than cudaFreeAsync.
std::mutex managedMutex;
std::set<void *> managed;

bool allowTf32() {
  const char *value = std::getenv("PIPEDREAM_ALLOW_TF32");
  return value && std::strcmp(value, "1") == 0;
}

/// pd_gpu_gemm_*: checks, maps row-major onto cuBLAS's column-major call.
void gemm(const char *function, cudaDataType_t type, int64_t batch, int64_t m,
          int64_t n, int64_t k, int32_t transA, int32_t transB, float alpha,
          const void *A, int64_t lda, int64_t strideA, const void *B,
          int64_t ldb, int64_t strideB, float beta, void *C, int64_t ldc,
          int64_t strideC) {
  using pipedream::runtime::ColumnMajorGemm;
  using pipedream::runtime::RowMajorGemm;
  RowMajorGemm g;
  g.batch = batch;
  g.m = m;
  g.n = n;
  g.k = k;
  g.transA = transA != 0;
  g.transB = transB != 0;
  g.lda = lda;
  g.strideA = strideA;
  g.ldb = ldb;
  g.strideB = strideB;
  g.ldc = ldc;
  g.strideC = strideC;
  g.nullA = !A;
  g.nullB = !B;
  g.nullC = !C;
  pipedream::runtime::normalizeLeadingDimensions(g);
  std::string error = pipedream::runtime::checkGemm(g, function);
  if (!error.empty()) {
    record(error);
    return;
  }
  if (batch == 0 || m == 0 || n == 0)
    return;
  cudaStream_t s = stream();
  cublasHandle_t handle = s ? blas() : nullptr;
  if (!handle || blasFailed(cublasSetStream(handle, s), "cublasSetStream"))
    return;
  ColumnMajorGemm c = pipedream::runtime::toColumnMajor(g);
  // k == 0: C = beta * C, which cuBLAS does with any valid lda/ldb.
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if (type == CUDA_R_32F && allowTf32())
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  blasFailed(
      cublasGemmStridedBatchedEx(
          handle, c.transA ? CUBLAS_OP_T : CUBLAS_OP_N,
          c.transB ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(c.m),
          static_cast<int>(c.n), static_cast<int>(c.k), &alpha,
          c.swapped ? B : A, type, static_cast<int>(c.lda), c.strideA,
          c.swapped ? A : B, type, static_cast<int>(c.ldb), c.strideB, &beta,
          C, type, static_cast<int>(c.ldc), c.strideC,
          static_cast<int>(c.batch), compute, CUBLAS_GEMM_DEFAULT),
      function);
}

} // namespace

//===----------------------------------------------------------------------===//
// mgpu*: MLIR 22 gpu-to-llvm host calls
//===----------------------------------------------------------------------===//

/// A fatbin/cubin (gpu.binary, cubin-format=fatbin|bin), loaded into every
/// device context by the runtime API.
PD_GPU_EXPORT void *mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  cudaLibrary_t library = nullptr;
  if (failed(cudaLibraryLoadData(&library, data, nullptr, nullptr, 0, nullptr,
                                 nullptr, 0),
             "cudaLibraryLoadData"))
    return nullptr;
  return library;
}

/// PTX text (cubin-format=isa), compiled by the driver at `optLevel`.
PD_GPU_EXPORT void *mgpuModuleLoadJIT(void *data, int optLevel) {
  char log[4096] = {0};
  cudaJitOption options[] = {cudaJitErrorLogBuffer,
                             cudaJitErrorLogBufferSizeBytes,
                             cudaJitOptimizationLevel};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log)),
                    reinterpret_cast<void *>(static_cast<intptr_t>(optLevel))};
  cudaLibrary_t library = nullptr;
  cudaError_t error = cudaLibraryLoadData(&library, data, options, values, 3,
                                          nullptr, nullptr, 0);
  if (error != cudaSuccess) {
    std::string text = log;
    for (char &ch : text)
      if (ch == '\n')
        ch = ' ';
    failed(error, text.empty() ? "cudaLibraryLoadData (PTX)"
                               : ("cudaLibraryLoadData (PTX: " + text + ")")
                                     .c_str());
    return nullptr;
  }
  return library;
}

PD_GPU_EXPORT void mgpuModuleUnload(void *module) {
  if (module)
    failed(cudaLibraryUnload(static_cast<cudaLibrary_t>(module)),
           "cudaLibraryUnload");
}

PD_GPU_EXPORT void *mgpuModuleGetFunction(void *module, const char *name) {
  if (!module) {
    record(std::string("cuda: no module for kernel '") + (name ? name : "") +
           "' (its module failed to load)");
    return nullptr;
  }
  cudaKernel_t kernel = nullptr;
  if (failed(cudaLibraryGetKernel(&kernel, static_cast<cudaLibrary_t>(module),
                                  name),
             "cudaLibraryGetKernel"))
    return nullptr;
  return reinterpret_cast<void *>(kernel);
}

// NOTE: intptr_t dimensions (MLIR's index type), as upstream.
PD_GPU_EXPORT void mgpuLaunchKernel(void *function, intptr_t gridX,
                                    intptr_t gridY, intptr_t gridZ,
                                    intptr_t blockX, intptr_t blockY,
                                    intptr_t blockZ, int32_t smem,
                                    void *stream, void **params, void **extra,
                                    size_t /*paramsCount*/) {
  if (!function) {
    record("cuda: launch of a kernel that was not found");
    return;
  }
  if (extra) {
    record("cuda: mgpuLaunchKernel: 'extra' launch parameters are not "
           "supported by the runtime API");
    return;
  }
  const void *kernel = function;
  if (smem > 48 * 1024 &&
      failed(cudaFuncSetAttribute(kernel,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  smem),
             "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)"))
    return;
  dim3 grid(static_cast<unsigned>(gridX), static_cast<unsigned>(gridY),
            static_cast<unsigned>(gridZ));
  dim3 block(static_cast<unsigned>(blockX), static_cast<unsigned>(blockY),
             static_cast<unsigned>(blockZ));
  failed(cudaLaunchKernel(kernel, grid, block, params,
                          static_cast<size_t>(smem),
                          static_cast<cudaStream_t>(stream)),
         "cudaLaunchKernel");
}

/// Clusters (sm_90): cudaLaunchKernelExC with a cluster-dimension attribute.
PD_GPU_EXPORT void
mgpuLaunchClusterKernel(void *function, intptr_t clusterX, intptr_t clusterY,
                        intptr_t clusterZ, intptr_t gridX, intptr_t gridY,
                        intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                        intptr_t blockZ, int32_t smem, void *stream,
                        void **params, void **extra, size_t /*paramsCount*/) {
  if (!function || extra) {
    record(function ? "cuda: mgpuLaunchClusterKernel: 'extra' is not "
                      "supported"
                    : "cuda: launch of a kernel that was not found");
    return;
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(gridX),
                        static_cast<unsigned>(gridY),
                        static_cast<unsigned>(gridZ));
  config.blockDim = dim3(static_cast<unsigned>(blockX),
                         static_cast<unsigned>(blockY),
                         static_cast<unsigned>(blockZ));
  config.dynamicSmemBytes = static_cast<size_t>(smem);
  config.stream = static_cast<cudaStream_t>(stream);
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(clusterX);
  attribute.val.clusterDim.y = static_cast<unsigned>(clusterY);
  attribute.val.clusterDim.z = static_cast<unsigned>(clusterZ);
  config.attrs = &attribute;
  config.numAttrs = 1;
  if (smem > 48 * 1024 &&
      failed(cudaFuncSetAttribute(function,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  smem),
             "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)"))
    return;
  failed(cudaLaunchKernelExC(&config, function, params), "cudaLaunchKernelExC");
}

/// The executing thread's stream (one per rank): a program's gpu.wait /
/// async tokens all run on it.
PD_GPU_EXPORT void *mgpuStreamCreate() { return stream(); }

PD_GPU_EXPORT void mgpuStreamDestroy(void *s) {
  if (s && s != threadStream)
    failed(cudaStreamDestroy(static_cast<cudaStream_t>(s)),
           "cudaStreamDestroy");
}

PD_GPU_EXPORT void mgpuStreamSynchronize(void *s) {
  failed(cudaStreamSynchronize(static_cast<cudaStream_t>(s)),
         "cudaStreamSynchronize");
}

PD_GPU_EXPORT void mgpuStreamWaitEvent(void *s, void *event) {
  failed(cudaStreamWaitEvent(static_cast<cudaStream_t>(s),
                             static_cast<cudaEvent_t>(event), 0),
         "cudaStreamWaitEvent");
}

PD_GPU_EXPORT void *mgpuEventCreate() {
  cudaEvent_t event = nullptr;
  if (failed(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
             "cudaEventCreateWithFlags"))
    return nullptr;
  return event;
}

PD_GPU_EXPORT void mgpuEventDestroy(void *event) {
  failed(cudaEventDestroy(static_cast<cudaEvent_t>(event)),
         "cudaEventDestroy");
}

PD_GPU_EXPORT void mgpuEventSynchronize(void *event) {
  failed(cudaEventSynchronize(static_cast<cudaEvent_t>(event)),
         "cudaEventSynchronize");
}

PD_GPU_EXPORT void mgpuEventRecord(void *event, void *s) {
  failed(cudaEventRecord(static_cast<cudaEvent_t>(event),
                         static_cast<cudaStream_t>(s)),
         "cudaEventRecord");
}

/// Stream-ordered device memory; managed memory when isHostShared.
PD_GPU_EXPORT void *mgpuMemAlloc(uint64_t sizeBytes, void *s,
                                 bool isHostShared) {
  void *pointer = nullptr;
  if (isHostShared) {
    if (failed(cudaMallocManaged(&pointer, sizeBytes ? sizeBytes : 1),
               "cudaMallocManaged"))
      return nullptr;
    std::lock_guard<std::mutex> lock(managedMutex);
    managed.insert(pointer);
    return pointer;
  }
  if (failed(cudaMallocAsync(&pointer, sizeBytes ? sizeBytes : 1,
                             static_cast<cudaStream_t>(s)),
             "cudaMallocAsync"))
    return nullptr;
  return pointer;
}

PD_GPU_EXPORT void mgpuMemFree(void *pointer, void *s) {
  if (!pointer)
    return;
  {
    std::lock_guard<std::mutex> lock(managedMutex);
    auto it = managed.find(pointer);
    if (it != managed.end()) {
      managed.erase(it);
      // cudaFree synchronizes the device: the managed buffer is idle.
      failed(cudaFree(pointer), "cudaFree");
      return;
    }
  }
  failed(cudaFreeAsync(pointer, static_cast<cudaStream_t>(s)),
         "cudaFreeAsync");
}

PD_GPU_EXPORT void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                              void *s) {
  failed(cudaMemcpyAsync(dst, src, sizeBytes, cudaMemcpyDefault,
                         static_cast<cudaStream_t>(s)),
         "cudaMemcpyAsync");
}

namespace {
/// Fills `count` elements of `width` bytes with `value` (cudaMemsetAsync
/// does bytes only): a byte fill when all bytes agree, else a doubling copy.
void fill(void *dst, const void *value, size_t width, size_t count,
          cudaStream_t s) {
  if (count == 0)
    return;
  const unsigned char *bytes = static_cast<const unsigned char *>(value);
  bool uniform = true;
  for (size_t i = 1; i < width; ++i)
    uniform = uniform && bytes[i] == bytes[0];
  if (uniform) {
    failed(cudaMemsetAsync(dst, bytes[0], width * count, s),
           "cudaMemsetAsync");
    return;
  }
  unsigned char *out = static_cast<unsigned char *>(dst);
  if (failed(cudaMemcpyAsync(out, value, width, cudaMemcpyHostToDevice, s),
             "cudaMemcpyAsync (memset)"))
    return;
  // NOTE: host-to-device from pageable memory returns after the source is
  // staged, so `value` (our caller's stack) may go away afterwards.
  size_t done = 1;
  while (done < count) {
    size_t next = done * 2 <= count ? done : count - done;
    if (failed(cudaMemcpyAsync(out + done * width, out, next * width,
                               cudaMemcpyDeviceToDevice, s),
               "cudaMemcpyAsync (memset)"))
      return;
    done += next;
  }
}
} // namespace

PD_GPU_EXPORT void mgpuMemset32(void *dst, unsigned int value, size_t count,
                                void *s) {
  fill(dst, &value, sizeof(value), count, static_cast<cudaStream_t>(s));
}

PD_GPU_EXPORT void mgpuMemset16(void *dst, unsigned short value,
                                size_t count, void *s) {
  fill(dst, &value, sizeof(value), count, static_cast<cudaStream_t>(s));
}

PD_GPU_EXPORT void mgpuMemHostRegister(void *pointer, uint64_t sizeBytes) {
  failed(cudaHostRegister(pointer, sizeBytes, cudaHostRegisterDefault),
         "cudaHostRegister");
}

PD_GPU_EXPORT void mgpuMemHostUnregister(void *pointer) {
  failed(cudaHostUnregister(pointer), "cudaHostUnregister");
}

PD_GPU_EXPORT void mgpuSetDefaultDevice(int32_t device) {
  defaultDevice = device;
  failed(cudaSetDevice(device), "cudaSetDevice");
}

//===----------------------------------------------------------------------===//
// Helpers for generated and hand-written programs
//===----------------------------------------------------------------------===//

/// Records `message` as the thread's error (if it is the first): the
/// runtime fails the running call with it.
PD_GPU_EXPORT void pd_gpu_record_error(const char *message) {
  record(message ? message : "error reported by the bundle's program");
}

/// 1 when `pointer` is device (or managed) memory of the CUDA runtime.
PD_GPU_EXPORT int pd_gpu_pointer_is_device(const void *pointer) {
  cudaPointerAttributes attributes;
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError(); // not sticky; clear it
    return 0;
  }
  return attributes.type == cudaMemoryTypeDevice ||
                 attributes.type == cudaMemoryTypeManaged
             ? 1
             : 0;
}

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

PD_GPU_EXPORT void pd_gpu_gemm_f32(int64_t batch, int64_t m, int64_t n,
                                   int64_t k, int32_t transA, int32_t transB,
                                   float alpha, const float *A, int64_t lda,
                                   int64_t strideA, const float *B,
                                   int64_t ldb, int64_t strideB, float beta,
                                   float *C, int64_t ldc, int64_t strideC) {
  gemm("pd_gpu_gemm_f32", CUDA_R_32F, batch, m, n, k, transA, transB, alpha,
       A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC);
}

PD_GPU_EXPORT void pd_gpu_gemm_bf16(int64_t batch, int64_t m, int64_t n,
                                    int64_t k, int32_t transA, int32_t transB,
                                    float alpha, const void *A, int64_t lda,
                                    int64_t strideA, const void *B,
                                    int64_t ldb, int64_t strideB, float beta,
                                    void *C, int64_t ldc, int64_t strideC) {
  gemm("pd_gpu_gemm_bf16", CUDA_R_16BF, batch, m, n, k, transA, transB, alpha,
       A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC);
}

//===----------------------------------------------------------------------===//
// The runtime's table
//===----------------------------------------------------------------------===//

namespace {

void copyOut(const std::string &text, char *out, size_t capacity) {
  if (!out || capacity == 0)
    return;
  size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

int deviceCount(char *message, size_t capacity) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    std::string hint;
    if (error == cudaErrorInsufficientDriver)
      hint = "; no NVIDIA driver, or one older than CUDA " +
             std::to_string(CUDART_VERSION / 1000) + "." +
             std::to_string(CUDART_VERSION % 1000 / 10) + " needs";
    copyOut(std::string("cudaGetDeviceCount: ") + cudaGetErrorString(error) +
                " (" + cudaGetErrorName(error) + hint + ")",
            message, capacity);
    return -1;
  }
  if (count <= 0) {
    copyOut("cudaGetDeviceCount: 0 devices", message, capacity);
    return -1;
  }
  return count;
}

int deviceName(char *name, size_t capacity) {
  cudaDeviceProp prop;
  if (failed(cudaGetDeviceProperties(&prop, defaultDevice),
             "cudaGetDeviceProperties"))
    return 1;
  char text[512];
  std::snprintf(text, sizeof(text), "%s (sm_%d%d, %.0f GiB)", prop.name,
                prop.major, prop.minor,
                static_cast<double>(prop.totalGlobalMem) / (1ull << 30));
  copyOut(text, name, capacity);
  return 0;
}

int takeError(char *message, size_t capacity) {
  if (firstError[0] == '\0')
    return 0;
  copyOut(firstError, message, capacity);
  firstError[0] = '\0';
  return 1;
}

void *alloc(size_t bytes) {
  void *pointer = nullptr;
  if (failed(cudaSetDevice(defaultDevice), "cudaSetDevice") ||
      failed(cudaMalloc(&pointer, bytes ? bytes : 1), "cudaMalloc"))
    return nullptr;
  return pointer;
}

void release(void *pointer) {
  if (pointer)
    failed(cudaFree(pointer), "cudaFree");
}

int copyToDevice(void *device, const void *host, size_t bytes) {
  cudaStream_t s = stream();
  if (!s)
    return 1;
  return failed(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice,
                                s),
                "cudaMemcpyAsync (host to device)")
             ? 1
             : 0;
}

int copyToHost(void *host, const void *device, size_t bytes) {
  cudaStream_t s = stream();
  if (!s)
    return 1;
  return failed(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost,
                                s),
                "cudaMemcpyAsync (device to host)")
             ? 1
             : 0;
}

int copyDevice(void *dst, const void *src, size_t bytes) {
  cudaStream_t s = stream();
  if (!s)
    return 1;
  return failed(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s),
                "cudaMemcpyAsync (device to device)")
             ? 1
             : 0;
}

int zero(void *device, size_t bytes) {
  cudaStream_t s = stream();
  if (!s)
    return 1;
  return failed(cudaMemsetAsync(device, 0, bytes, s), "cudaMemsetAsync") ? 1
                                                                          : 0;
}

int synchronize() {
  cudaStream_t s = stream();
  if (!s)
    return 1;
  return failed(cudaStreamSynchronize(s), "cudaStreamSynchronize") ? 1 : 0;
}

} // namespace

// TransportNccl.cpp.
int pdGpuNcclUniqueId(unsigned char id[PD_GPU_NCCL_ID_BYTES]);
int pdGpuNcclCreate(size_t rank, size_t size,
                    const unsigned char id[PD_GPU_NCCL_ID_BYTES],
                    pd_transport_ops *ops, void **state);

namespace pipedream {
namespace runtime {
/// For TransportNccl.cpp: the thread's stream and error recording.
cudaStream_t gpuThreadStream() { return stream(); }
void gpuRecordError(const std::string &message) { record(message); }
} // namespace runtime
} // namespace pipedream

PD_GPU_EXPORT const pd_gpu_support *pd_gpu_support_get(void) {
  static const pd_gpu_support table = {
      PD_GPU_SUPPORT_ABI, deviceCount,  deviceName,       takeError,
      alloc,              release,      copyToDevice,     copyToHost,
      copyDevice,         zero,         synchronize,      pdGpuNcclUniqueId,
      pdGpuNcclCreate,
  };
  return &table;
}
