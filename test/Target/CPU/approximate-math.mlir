// RUN: pipedream-opt %s -cpu-approximate-math | FileCheck %s

// f32 transcendentals become arithmetic (polynomials); other types keep the
// math op (libm later).
// CHECK-LABEL: func.func @f32_math
// CHECK-NOT: math.erf
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK: arith.mulf
// CHECK: return
func.func @f32_math(%x: f32) -> (f32, f32, f32) {
  %0 = math.erf %x : f32
  %1 = math.exp %x : f32
  %2 = math.tanh %x : f32
  return %0, %1, %2 : f32, f32, f32
}

// CHECK-LABEL: func.func @f64_math
// CHECK: math.erf %{{.*}} : f64
// CHECK: math.exp %{{.*}} : f64
func.func @f64_math(%x: f64) -> (f64, f64) {
  %0 = math.erf %x : f64
  %1 = math.exp %x : f64
  return %0, %1 : f64, f64
}

// Vectors of f32 too (the vectorized GEMM epilogues).
// CHECK-LABEL: func.func @vector_math
// CHECK-NOT: math.exp
// CHECK: return
func.func @vector_math(%x: vector<8xf32>) -> vector<8xf32> {
  %0 = math.exp %x : vector<8xf32>
  return %0 : vector<8xf32>
}
