// RUN: pipedream-opt %s --pass-pipeline='builtin.module(func.func(cpu-plan-temporaries))' -verify-diagnostics

// The temporaries' deallocs are not known before the deallocation pipeline
// has lowered its bufferization.dealloc ops: an error, not a silent no-op.
func.func @before_deallocs(%x: memref<4xf32>) {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  // expected-error @below {{cpu-plan-temporaries runs after the deallocation pipeline; run bufferization-lower-deallocations first}}
  bufferization.dealloc (%a : memref<4xf32>) if (%true)
  return
}
