//===- Passes.h - CPU code generation passes --------------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Passes pipedream adds to the upstream CPU lowering. See Passes.td for what
// each does and CPUCodegen.h for the pipeline that strings them together.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_TARGET_CPU_PASSES_H
#define PIPEDREAM_TARGET_CPU_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace pipedream::cpu {

#define GEN_PASS_DECL
#include "pipedream/Target/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pipedream/Target/CPU/Passes.h.inc"

} // namespace pipedream::cpu

#endif // PIPEDREAM_TARGET_CPU_PASSES_H
