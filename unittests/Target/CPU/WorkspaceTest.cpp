//===- WorkspaceTest.cpp - report.json's workspace estimate ---------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// estimateWorkspace (Workspace.h) on small LLVM dialect modules shaped as
// the CPU lowering leaves them: allocation sites whose size a split
// function (cpu-split-large-functions) passes from one part to the next
// through a frame slot that the split reuses.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Target/CPU/Workspace.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

pipedream::cpu::WorkspaceEstimate estimate(const char *source,
                                           const char *root = "f") {
  MLIRContext context;
  context.loadDialect<LLVM::LLVMDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  EXPECT_TRUE(module);
  if (!module)
    return {};
  return pipedream::cpu::estimateWorkspace(*module, {std::string(root)});
}

// Slot 8 holds 1000 from part 0 until part 1 reads it; part 1 then reuses
// the slot for 1000 - 24, which part 2 reads. Reading every load as the
// slot's first store (the estimate before) gave 2000; a `sub` it did not
// evaluate made part 2's site dynamic.
constexpr const char *kReusedSlot = R"mlir(
  llvm.func @malloc(i64) -> !llvm.ptr
  llvm.func @f() {
    %one = llvm.mlir.constant(1 : i64) : i64
    %frame = llvm.alloca %one x !llvm.array<16 x i8> : (i64) -> !llvm.ptr
    llvm.call @f.part0(%frame) : (!llvm.ptr) -> ()
    llvm.call @f.part1(%frame) : (!llvm.ptr) -> ()
    llvm.call @f.part2(%frame) : (!llvm.ptr) -> ()
    llvm.return
  }
  llvm.func internal @f.part2(%arg0: !llvm.ptr) {
    %slot = llvm.getelementptr %arg0[8] : (!llvm.ptr) -> !llvm.ptr, i8
    %n = llvm.load %slot : !llvm.ptr -> i64
    %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    llvm.return
  }
  llvm.func internal @f.part0(%arg0: !llvm.ptr) {
    %n = llvm.mlir.constant(1000 : i64) : i64
    %slot = llvm.getelementptr %arg0[8] : (!llvm.ptr) -> !llvm.ptr, i8
    llvm.store %n, %slot : i64, !llvm.ptr
    llvm.return
  }
  llvm.func internal @f.part1(%arg0: !llvm.ptr) {
    %slot = llvm.getelementptr %arg0[8] : (!llvm.ptr) -> !llvm.ptr, i8
    %n = llvm.load %slot : !llvm.ptr -> i64
    %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    %c = llvm.mlir.constant(24 : i64) : i64
    %m = llvm.sub %n, %c : i64
    llvm.store %m, %slot : i64, !llvm.ptr
    llvm.return
  }
)mlir";

TEST(Workspace, ALoadReadsTheLatestEarlierPartsStore) {
  pipedream::cpu::WorkspaceEstimate w = estimate(kReusedSlot);
  EXPECT_EQ(w.bytes, 1000 + 976);
  EXPECT_EQ(w.dynamicSites, 0);
}

// A load of a slot that no earlier part stored (only a later one) is not a
// known size: the site is counted as dynamic, not given the later value.
TEST(Workspace, NoEarlierStoreIsDynamic) {
  pipedream::cpu::WorkspaceEstimate w = estimate(R"mlir(
    llvm.func @malloc(i64) -> !llvm.ptr
    llvm.func @f() {
      %one = llvm.mlir.constant(1 : i64) : i64
      %frame = llvm.alloca %one x !llvm.array<8 x i8> : (i64) -> !llvm.ptr
      llvm.call @f.part0(%frame) : (!llvm.ptr) -> ()
      llvm.call @f.part1(%frame) : (!llvm.ptr) -> ()
      llvm.return
    }
    llvm.func internal @f.part0(%arg0: !llvm.ptr) {
      %n = llvm.load %arg0 : !llvm.ptr -> i64
      %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
      llvm.return
    }
    llvm.func internal @f.part1(%arg0: !llvm.ptr) {
      %n = llvm.mlir.constant(64 : i64) : i64
      llvm.store %n, %arg0 : i64, !llvm.ptr
      %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
      llvm.return
    }
  )mlir");
  EXPECT_EQ(w.bytes, 64);
  EXPECT_EQ(w.dynamicSites, 1);
}

// Sites reached through calls count once; a root that does not exist is
// skipped.
TEST(Workspace, SitesOfCalleesCountOnce) {
  const char *source = R"mlir(
    llvm.func @malloc(i64) -> !llvm.ptr
    llvm.func @g() {
      %n = llvm.mlir.constant(128 : i64) : i64
      %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
      llvm.return
    }
    llvm.func @f() {
      llvm.call @g() : () -> ()
      llvm.call @g() : () -> ()
      llvm.return
    }
  )mlir";
  EXPECT_EQ(estimate(source).bytes, 128);
  EXPECT_EQ(estimate(source, "missing").bytes, 0);
}

} // namespace
