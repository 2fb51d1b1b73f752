//===- ReportPartition.cpp - pipe-report-partition
//-------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The pass over PartitionReport.h: the report pipedream-compile's --report
// prints, from the module alone.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/PartitionReport.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleReport.h"

#include "llvm/Support/FormatVariadic.h"

namespace pipedream::pipe {
#define GEN_PASS_DEF_REPORTPARTITIONPASS
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace pipedream::pipe

using namespace mlir;
using namespace pipedream;

namespace {
struct ReportPartitionPass
    : pipedream::pipe::impl::ReportPartitionPassBase<ReportPartitionPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void ReportPartitionPass::runOnOperation() {
  ModuleOp module = getOperation();
  FailureOr<PartitionReport> report = collectPartitionReport(module);
  if (failed(report))
    return signalPassFailure();
  auto write = [&](const std::string &path, const std::string &text) {
    if (path.empty())
      return true;
    if (std::string err = pipe::schedule::writeTextFile(path, text);
        !err.empty()) {
      module.emitError() << "pipe-report-partition: " << err;
      return false;
    }
    return true;
  };
  std::string text, json;
  {
    llvm::raw_string_ostream os(text);
    printPartitionReport(*report, os);
  }
  {
    llvm::raw_string_ostream os(json);
    os << llvm::formatv("{0:2}",
                        llvm::json::Value(partitionReportJSON(*report)))
       << "\n";
  }
  if (!write(textFile, text) || !write(jsonFile, json))
    return signalPassFailure();
  markAllAnalysesPreserved();
}
