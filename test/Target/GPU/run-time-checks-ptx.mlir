// REQUIRES: cuda-toolkit
// RUN: pipedream-opt %S/run-time-checks.mlir --pipedream-cuda-lowering=to-nvvm=true | pipedream-opt -gpu-module-to-binary=format=isa | FileCheck %s

// The PTX of run-time-checks.mlir's kernels: the check's kernel compares
// the min and max with the bounds (signed 64-bit) and stores the record's
// fields to global memory (device memory the host copies back).
// CHECK: .visible .entry main_k{{[0-9]+}}(
// CHECK: setp.ge.s64
// CHECK: st.global
// CHECK: setp.lt.s64
// CHECK: setp.ge.s64
// CHECK: st.global
// CHECK: st.global
// CHECK: st.global
// CHECK: st.global
// CHECK: st.global
