// cpu-lower-gemm-to-blas: an unknown f32 callee is refused.
// RUN: pipedream-opt %s --cpu-lower-gemm-to-blas="sgemm=pd_cpu_gemm_f16" -verify-diagnostics -split-input-file

// expected-error @+1 {{cpu-lower-gemm-to-blas: sgemm=pd_cpu_gemm_f16: expected cblas_sgemm, pd_cpu_sgemm or pd_cpu_gemm_bf16}}
module {
}
