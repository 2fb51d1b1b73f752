//===- Passes.h - CUDA code generation passes -------------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Passes pipedream adds to the upstream GPU lowering. See Passes.td for what
// each does and CUDACodegen.h for the pipeline that strings them together.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TARGET_GPU_PASSES_H
#define PIPEDREAM_TARGET_GPU_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace pipedream::cuda {

#define GEN_PASS_DECL
#include "pipedream/Target/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pipedream/Target/GPU/Passes.h.inc"

} // namespace pipedream::cuda

#endif // PIPEDREAM_TARGET_GPU_PASSES_H
