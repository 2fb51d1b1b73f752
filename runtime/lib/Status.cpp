//===- Status.cpp - errors, statuses and enums ----------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The thread's last error (every C entry point reports through it), the
// status, dtype and role names of pipedream/runtime.h.
//
//===----------------------------------------------------------------------===//

#include "pipedream/runtime.h"

#include "Bundle.h"
#include "Checkpoint.h"
#include "ConstantWeights.h"
#include "DataIndexChecks.h"
#include "GpuDevice.h"
#include "Manifest.h"
#include "Threads.h"
#include "StepSnapshot.h"
#include "Trace.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <sys/stat.h>

using pipedream::runtime::allocateAligned;
using pipedream::runtime::BufferSpec;
using pipedream::runtime::describeType;
using pipedream::runtime::ensureMemory;
using pipedream::runtime::EntryPoint;
using pipedream::runtime::Error;
using pipedream::runtime::fail;
using pipedream::runtime::FunctionSpec;
using pipedream::runtime::guarded;
using pipedream::runtime::kAlignment;
using pipedream::runtime::Manifest;
using pipedream::runtime::nullArgument;
using pipedream::runtime::PersistentSpec;
using pipedream::runtime::TensorType;
using pipedream::runtime::TrainingSpec;
using pipedream::runtime::WeightSpec;

namespace {

thread_local std::string lastError;

} // namespace

namespace pipedream {
namespace runtime {

pd_status fail(pd_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

pd_status nullArgument(const char *function, const char *argument) {
  return fail(PD_ERROR_INVALID_ARGUMENT,
              std::string(function) + ": '" + argument + "' is NULL");
}

} // namespace runtime
} // namespace pipedream

//===----------------------------------------------------------------------===//
// Errors and enums
//===----------------------------------------------------------------------===//

const char *pd_last_error(void) { return lastError.c_str(); }

void pd_clear_error(void) { lastError.clear(); }

const char *pd_status_string(pd_status status) {
  switch (status) {
  case PD_OK:
    return "ok";
  case PD_ERROR_INVALID_ARGUMENT:
    return "invalid argument";
  case PD_ERROR_NOT_FOUND:
    return "not found";
  case PD_ERROR_IO:
    return "i/o error";
  case PD_ERROR_FORMAT:
    return "malformed file";
  case PD_ERROR_MISMATCH:
    return "type mismatch";
  case PD_ERROR_OUT_OF_MEMORY:
    return "out of memory";
  case PD_ERROR_LOAD:
    return "library load error";
  case PD_ERROR_UNSUPPORTED:
    return "unsupported";
  case PD_ERROR_INTERNAL:
    return "internal error";
  case PD_ERROR_TIMEOUT:
    return "timed out";
  case PD_ERROR_PEER:
    return "peer failed";
  case PD_ERROR_CHECK_FAILED:
    return "run-time check failed";
  case PD_STATUS_MAX_ENUM_:
    break;
  }
  return "unknown status";
}

const char *pd_dtype_name(pd_dtype dtype) {
  switch (dtype) {
  case PD_DTYPE_F32:
    return "f32";
  case PD_DTYPE_F64:
    return "f64";
  case PD_DTYPE_F16:
    return "f16";
  case PD_DTYPE_BF16:
    return "bf16";
  case PD_DTYPE_I64:
    return "i64";
  case PD_DTYPE_I32:
    return "i32";
  case PD_DTYPE_I8:
    return "i8";
  case PD_DTYPE_I1:
    return "i1";
  case PD_DTYPE_U8:
    return "u8";
  case PD_DTYPE_MAX_ENUM_:
    break;
  }
  return "?";
}

pd_status pd_dtype_from_name(const char *name, pd_dtype *out) {
  if (!name)
    return nullArgument("pd_dtype_from_name", "name");
  if (!out)
    return nullArgument("pd_dtype_from_name", "out");
  return guarded([&] {
    if (!pipedream::runtime::parseDtype(name, *out))
      return fail(PD_ERROR_INVALID_ARGUMENT,
                  std::string("unknown dtype '") + name + "' (expected one of " +
                      pipedream::runtime::dtypeNameList() + ")");
    return PD_OK;
  });
}

size_t pd_dtype_size(pd_dtype dtype) {
  switch (dtype) {
  case PD_DTYPE_F64:
  case PD_DTYPE_I64:
    return 8;
  case PD_DTYPE_F32:
  case PD_DTYPE_I32:
    return 4;
  case PD_DTYPE_F16:
  case PD_DTYPE_BF16:
    return 2;
  case PD_DTYPE_I8:
  case PD_DTYPE_I1:
  case PD_DTYPE_U8:
    return 1;
  case PD_DTYPE_MAX_ENUM_:
    break;
  }
  return 0;
}

const char *pd_role_name(pd_role role) {
  switch (role) {
  case PD_ROLE_INPUT:
    return "input";
  case PD_ROLE_OUTPUT:
    return "output";
  case PD_ROLE_WEIGHT:
    return "weight";
  case PD_ROLE_GRAD:
    return "grad";
  case PD_ROLE_STATE:
    return "state";
  case PD_ROLE_MAX_ENUM_:
    break;
  }
  return "?";
}

int pd_runtime_api_version(void) { return PD_RUNTIME_API_VERSION; }

pd_status pd_set_last_error(pd_status status, const char *message) {
  return fail(status, message ? message : "");
}
