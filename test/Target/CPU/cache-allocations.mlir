// RUN: pipedream-opt %s -split-input-file -cpu-cache-allocations="max-cached-bytes=4096" | FileCheck %s
// RUN: pipedream-opt %s -split-input-file -cpu-cache-allocations | FileCheck %s --check-prefix=GLOBALS

// Each malloc site gets its own slot; malloc/free calls go through the
// caching functions, which are the only callers of malloc/free left.

// GLOBALS-DAG: llvm.mlir.global internal @__pipedream_cached_bytes(0 : i64)
// GLOBALS-DAG: llvm.mlir.global internal @__pipedream_alloc_slot_0(0 : i64)
// GLOBALS-DAG: llvm.mlir.global internal @__pipedream_alloc_slot_1(0 : i64)
// The default cap is 1 GiB.
// GLOBALS-DAG: llvm.mlir.constant(1073741824 : i64)
// GLOBALS-NOT: __pipedream_alloc_slot_2
// Unloading program.so frees what is parked, slot by slot.
// GLOBALS-LABEL: llvm.func internal @__pipedream_drop_slot(
// GLOBALS:         llvm.atomicrmw xchg
// GLOBALS:         llvm.call @free
// GLOBALS-LABEL: llvm.func internal @__pipedream_release_cached()
// GLOBALS:         %[[S0:.*]] = llvm.mlir.addressof @__pipedream_alloc_slot_0
// GLOBALS:         llvm.call @__pipedream_drop_slot(%[[S0]])
// GLOBALS:         %[[S1:.*]] = llvm.mlir.addressof @__pipedream_alloc_slot_1
// GLOBALS:         llvm.call @__pipedream_drop_slot(%[[S1]])
// GLOBALS:       llvm.mlir.global_dtors dtors = [@__pipedream_release_cached], priorities = [65535 : i32], data = [#llvm.zero]

// CHECK-LABEL: llvm.func @step(
// CHECK:         %[[S0:.*]] = llvm.mlir.addressof @__pipedream_alloc_slot_0 : !llvm.ptr
// CHECK:         %[[A:.*]] = llvm.call @__pipedream_alloc(%{{.*}}, %[[S0]]) : (i64, !llvm.ptr) -> !llvm.ptr
// CHECK:         %[[S1:.*]] = llvm.mlir.addressof @__pipedream_alloc_slot_1 : !llvm.ptr
// CHECK:         %[[B:.*]] = llvm.call @__pipedream_alloc(%{{.*}}, %[[S1]]) : (i64, !llvm.ptr) -> !llvm.ptr
// CHECK:         llvm.call @__pipedream_free(%[[A]]) : (!llvm.ptr) -> ()
// CHECK:         llvm.call @__pipedream_free(%[[B]]) : (!llvm.ptr) -> ()
// CHECK-NOT:     llvm.call @malloc
// CHECK-NOT:     llvm.call @free

// alloc: take the parked block (exchange with 0), reuse it when the size
// matches, else free it and malloc size + 16 (the header). Both helpers
// stay calls (inlined at thousands of sites they made LLVM's register
// allocation quadratic in a training step's length).
// CHECK-LABEL: llvm.func internal @__pipedream_alloc(
// CHECK-SAME:      attributes {no_inline}
// CHECK:         llvm.atomicrmw xchg
// CHECK:         llvm.call @free
// CHECK:         llvm.call @malloc
// free: reserve the bytes against the cap, park with a compare-and-swap.
// CHECK-LABEL: llvm.func internal @__pipedream_free(
// CHECK-SAME:      attributes {no_inline}
// CHECK:         llvm.atomicrmw add
// CHECK:         llvm.mlir.constant(4096 : i64)
// CHECK:         llvm.cmpxchg
// CHECK:         llvm.atomicrmw sub
// CHECK:         llvm.call @free

module {
  llvm.func @malloc(i64) -> !llvm.ptr
  llvm.func @free(!llvm.ptr)
  llvm.func @step(%n: i64) {
    %a = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    %b = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    llvm.call @free(%a) : (!llvm.ptr) -> ()
    llvm.call @free(%b) : (!llvm.ptr) -> ()
    llvm.return
  }
}

// -----

// Another allocator in the module: nothing is rewritten (free must only see
// blocks with the header).

// CHECK-LABEL: llvm.func @mixed(
// CHECK:         llvm.call @malloc
// CHECK:         llvm.call @aligned_alloc
// CHECK:         llvm.call @free
// CHECK-NOT:     __pipedream_alloc

module {
  llvm.func @malloc(i64) -> !llvm.ptr
  llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
  llvm.func @free(!llvm.ptr)
  llvm.func @mixed(%n: i64) {
    %a = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    %b = llvm.call @aligned_alloc(%n, %n) : (i64, i64) -> !llvm.ptr
    llvm.call @free(%a) : (!llvm.ptr) -> ()
    llvm.call @free(%b) : (!llvm.ptr) -> ()
    llvm.return
  }
}
