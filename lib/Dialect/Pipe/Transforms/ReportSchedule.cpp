//===- ReportSchedule.cpp - pipe-report-schedule ---------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/IR/PipeOps.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/ProjectRanks.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleCSV.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleSearch.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleReport.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

namespace pipedream::pipe {
#define GEN_PASS_DEF_REPORTSCHEDULEPASS
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace pipedream::pipe

using namespace mlir;
using namespace pipedream::pipe;
namespace sched = pipedream::pipe::schedule;

namespace {
struct ReportSchedulePass
    : pipedream::pipe::impl::ReportSchedulePassBase<ReportSchedulePass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void ReportSchedulePass::runOnOperation() {
  ModuleOp module = getOperation();
  sched::Schedule schedule;
  ProgramOp program;
  for (ProgramOp p : module.getOps<ProgramOp>())
    if (p.isGlobalView()) {
      program = p;
      break;
    }
  if (kind.empty() && scheduleCsv.empty()) {
    if (!program) {
      module.emitError() << "pipe-report-schedule: no global pipe.program "
                            "in the module; give kind=... (and stages, "
                            "microbatches, virtual) or schedule-csv=FILE";
      return signalPassFailure();
    }
    schedule = scheduleOfProgram(program);
  } else if (kind == "auto") {
    // The search: every synchronous kind (V = `virtual`, or 2, for the
    // kinds with chunks) at M = `microbatches`, unit work per step.
    sched::SearchOptions search;
    search.numRanks = numStages;
    search.microbatches = {numMicrobatches};
    search.chunks = {numChunks > 1 ? (int64_t)numChunks : 2};
    std::vector<sched::SearchCandidate> candidates =
        sched::searchSchedules(search);
    if (numStages < 1 || numMicrobatches < 1 || candidates.empty()) {
      module.emitError() << "pipe-report-schedule: kind=auto: no valid "
                            "schedule for stages="
                         << numStages << " microbatches=" << numMicrobatches;
      return signalPassFailure();
    }
    llvm::outs() << "schedule candidates (unit work per step):\n"
                 << sched::candidatesTable(candidates);
    schedule = sched::buildSchedule(candidates.front().config);
  } else {
    std::optional<sched::Kind> k =
        kind.empty() ? std::nullopt : sched::parseKind(kind);
    if (!kind.empty() && !k) {
      module.emitError() << "pipe-report-schedule: unknown schedule kind '"
                         << kind
                         << "' (" << sched::kindNameList() << ")";
      return signalPassFailure();
    }
    sched::Config config{k.value_or(sched::Kind::OneFOneB), numStages,
                         numMicrobatches, numChunks};
    if (!scheduleCsv.empty()) {
      std::string text;
      auto buf = llvm::MemoryBuffer::getFile(scheduleCsv);
      if (!buf) {
        module.emitError() << "pipe-report-schedule: cannot read "
                           << scheduleCsv;
        return signalPassFailure();
      }
      sched::CSVImportOptions opts;
      opts.kind = k;
      std::string note;
      if (std::string err =
              sched::parseScheduleCSV((*buf)->getBuffer().str(), opts,
                                      schedule, &note);
          !err.empty()) {
        module.emitError() << "pipe-report-schedule: " << scheduleCsv << ": "
                           << err;
        return signalPassFailure();
      }
      if (!note.empty())
        module.emitRemark() << "pipe-report-schedule: " << scheduleCsv << ": "
                            << note;
    } else {
      if (std::string err = sched::validate(config); !err.empty()) {
        module.emitError() << "pipe-report-schedule: " << err;
        return signalPassFailure();
      }
      schedule = sched::buildSchedule(config);
    }
  }

  sched::ReportOptions options;
  options.microsPerUnit = 1000; // one unit cost = 1 ms in the trace
  sched::Report report = sched::buildReport(schedule, options);
  auto write = [&](const std::string &path, const std::string &text) {
    if (path.empty())
      return true;
    if (std::string err = sched::writeTextFile(path, text); !err.empty()) {
      module.emitError() << "pipe-report-schedule: " << err;
      return false;
    }
    return true;
  };
  std::string json;
  {
    llvm::raw_string_ostream os(json);
    os << llvm::formatv("{0:2}",
                        llvm::json::Value(sched::reportToJSON(report)))
       << "\n";
  }
  if (!write(jsonFile, json) ||
      !write(traceFile, sched::traceJSON(schedule, report, options)) ||
      !write(svgFile, sched::timelineSVG(schedule, report)) ||
      !write(csvFile, sched::exportScheduleCSV(schedule)))
    return signalPassFailure();
  markAllAnalysesPreserved();
}
