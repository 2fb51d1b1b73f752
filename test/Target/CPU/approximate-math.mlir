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

// erf: one rational function, clamped (no per-element choice of
// coefficients): x P(x^2) / Q(x^2), 6 + 5 FMAs (erf.mlir checks its
// accuracy).
// CHECK-LABEL: func.func @erf_rational
// CHECK-SAME: (%[[X:.*]]: vector<16xf32>)
// CHECK-NOT: arith.select
// CHECK: %[[LO:.*]] = arith.minimumf %[[X]], %{{.*}} : vector<16xf32>
// CHECK: %[[C:.*]] = arith.maximumf %[[LO]], %{{.*}} : vector<16xf32>
// CHECK: %[[T:.*]] = arith.mulf %[[C]], %[[C]]
// CHECK-COUNT-11: math.fma %{{.*}}, %[[T]], %{{.*}} : vector<16xf32>
// CHECK: %[[N:.*]] = arith.mulf %[[C]], %{{.*}}
// CHECK: %[[R:.*]] = arith.divf %[[N]], %{{.*}}
// CHECK: arith.minimumf %[[R]]
// CHECK: arith.maximumf
// CHECK-NOT: arith.select
// CHECK: return
func.func @erf_rational(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.erf %x : vector<16xf32>
  return %0 : vector<16xf32>
}
