// RUN: pipedream-opt %s -cpu-split-large-functions="max-ops=0" -verify-diagnostics

// A run of no operations is refused.
// expected-error @below {{cpu-split-large-functions: max-ops must be positive, got 0}}
module {
  llvm.func @f() {
    llvm.return
  }
}
