// RUN: pipedream-opt %s -cpu-bool-memory-as-bytes -verify-diagnostics

// The pass runs on the LLVM dialect: an i1 memref access left would reach
// LLVM unrewritten, so it is refused.
func.func @early(%m: memref<4xi1>, %i: index) -> i1 {
  // expected-error @+1 {{'memref.load' op cpu-bool-memory-as-bytes expects the LLVM dialect (i1 memref accesses left); run convert-to-llvm first}}
  %b = memref.load %m[%i] : memref<4xi1>
  return %b : i1
}
