//===- schedule-csv-fuzzer.cpp - libFuzzer target for schedule CSVs -------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// parseScheduleCSV (lib/Dialect/Pipe/Transforms/ScheduleCSV.cpp) on
// arbitrary text, then what loadScheduleCSVFile and pipe-report-schedule do
// with a parsed schedule: assignSlots, verify, and for a valid one the
// simulator and both export layouts (whose output must parse again).
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "pipedream/Dialect/Pipe/Transforms/ScheduleCSV.h"

#include <cstddef>
#include <cstdint>

using namespace pipedream;
namespace sched = pipedream::pipe::schedule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  sched::Schedule schedule;
  sched::CSVImportOptions options;
  if (std::string error = sched::parseScheduleCSV(text, options, schedule);
      !error.empty()) {
    fuzz::checkError(error, "");
    return 0;
  }
  sched::SlotAssignment slots = sched::assignSlots(schedule);
  if (std::string error = sched::verify(schedule, &slots); !error.empty()) {
    fuzz::checkError(error, "");
    return 0;
  }
  sched::Costs costs;
  (void)sched::simulate(schedule, costs);
  for (sched::CSVLayout layout :
       {sched::CSVLayout::TimeSteps, sched::CSVLayout::Compact}) {
    std::string csv = sched::exportScheduleCSV(schedule, layout);
    sched::CSVImportOptions same;
    same.kind = schedule.config.kind;
    same.numRanks = schedule.config.numRanks;
    same.numMicrobatches = schedule.config.numMicrobatches;
    same.numChunks = schedule.config.numChunks;
    sched::Schedule again;
    if (std::string error = sched::parseScheduleCSV(csv, same, again);
        !error.empty())
      fuzz::fatal("an exported schedule does not parse", error);
  }
  return 0;
}
