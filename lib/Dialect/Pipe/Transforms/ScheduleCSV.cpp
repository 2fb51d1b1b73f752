//===- ScheduleCSV.cpp - PyTorch pipelining schedule CSV -------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/ScheduleCSV.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

namespace pipedream {
namespace pipe {
namespace schedule {

namespace {

/// One action cell of the CSV.
struct Cell {
  int64_t row, column; // 0-based
  int64_t stage;
  char type; // F, B, I, W
  int64_t microbatch;
};

std::string trim(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace((unsigned char)s[b]))
    ++b;
  while (e > b && std::isspace((unsigned char)s[e - 1]))
    --e;
  return s.substr(b, e - b);
}

std::string where(int64_t row, int64_t column) {
  return "row " + std::to_string(row + 1) + ", column " +
         std::to_string(column + 1);
}

/// Parses "<digits>" at `pos`; returns false when there is none or it
/// overflows.
bool parseNumber(const std::string &s, size_t &pos, int64_t &value) {
  size_t start = pos;
  value = 0;
  while (pos < s.size() && std::isdigit((unsigned char)s[pos])) {
    if (value > (INT64_MAX - 9) / 10)
      return false;
    value = value * 10 + (s[pos] - '0');
    ++pos;
  }
  return pos > start;
}

/// Types of torch's compute_comms format that carry no computation.
const char *const kSkippedTypes[] = {"UNSHARD", "RESHARD", "REDUCE_GRAD",
                                     "SEND_F",  "RECV_F",  "SEND_B",
                                     "RECV_B"};

} // namespace

std::string parseScheduleCSV(const std::string &text,
                             const CSVImportOptions &options, Schedule &out) {
  // Rows: split on '\n', drop '\r', drop trailing blank lines.
  std::vector<std::string> lines;
  {
    std::string line;
    std::istringstream is(text);
    while (std::getline(is, line)) {
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      lines.push_back(line);
    }
    while (!lines.empty() && trim(lines.back()).empty())
      lines.pop_back();
  }
  if (lines.empty())
    return "the schedule CSV is empty (expected one row of actions per rank)";

  std::vector<Cell> cells;
  int64_t maxStage = -1, maxMb = -1;
  bool hasSplit = false;
  for (size_t r = 0; r < lines.size(); ++r) {
    std::vector<std::string> fields;
    std::string field;
    std::istringstream ls(lines[r]);
    while (std::getline(ls, field, ','))
      fields.push_back(field);
    for (size_t c = 0; c < fields.size(); ++c) {
      std::string s = trim(fields[c]);
      if (s.size() >= 2 && s.front() == '"' && s.back() == '"')
        s = trim(s.substr(1, s.size() - 2));
      if (s.empty())
        continue;
      std::string at = where(r, c);
      if (s.front() == '(')
        return at + ": '" + s +
               "' is an overlapped action (OVERLAP_F_B); write its "
               "sub-actions as separate cells";
      size_t pos = 0;
      int64_t stage = 0, mb = 0;
      if (!parseNumber(s, pos, stage))
        return at + ": '" + s +
               "' is not an action ({stage}{F|B|I|W}{microbatch}, e.g. 0F1)";
      size_t typeStart = pos;
      while (pos < s.size() && !std::isdigit((unsigned char)s[pos]))
        ++pos;
      std::string type = s.substr(typeStart, pos - typeStart);
      if (std::find(std::begin(kSkippedTypes), std::end(kSkippedTypes),
                    type) != std::end(kSkippedTypes)) {
        int64_t ignored;
        parseNumber(s, pos, ignored);
        if (pos != s.size())
          return at + ": '" + s + "' has trailing characters";
        continue; // communication / sharding: derived by pipedream
      }
      if (type != "F" && type != "B" && type != "I" && type != "W")
        return at + ": '" + s + "' has unknown action type '" + type +
               "' (expected F, B, I or W)";
      if (!parseNumber(s, pos, mb))
        return at + ": '" + s + "' has no micro-batch (e.g. " +
               std::to_string(stage) + type + "0)";
      if (pos != s.size())
        return at + ": '" + s + "' has trailing characters after the "
                                 "micro-batch";
      hasSplit |= type == "I" || type == "W";
      maxStage = std::max(maxStage, stage);
      maxMb = std::max(maxMb, mb);
      cells.push_back({(int64_t)r, (int64_t)c, stage, type[0], mb});
    }
  }

  // A complete schedule has an F (and a backward) of every stage and
  // micro-batch, so no stage or micro-batch number exceeds the number of
  // actions. Where the counts are inferred from the file, one that does is
  // an error here: the counts inferred from it would make verification
  // enumerate stages x micro-batches the file cannot hold (or overflow).
  const int64_t numCells = (int64_t)cells.size();
  const bool inferChunks = options.numChunks <= 0;
  const bool inferMicrobatches = options.numMicrobatches <= 0;
  for (const Cell &cell : cells) {
    bool badStage = inferChunks && cell.stage >= numCells;
    if (badStage || (inferMicrobatches && cell.microbatch >= numCells))
      return where(cell.row, cell.column) + ": '" +
             std::to_string(cell.stage) + cell.type +
             std::to_string(cell.microbatch) + "': " +
             (badStage ? "stage " : "micro-batch ") +
             std::to_string(badStage ? cell.stage : cell.microbatch) +
             " cannot be part of a complete schedule of " +
             std::to_string(numCells) + " actions";
  }

  Config config;
  config.numRanks = options.numRanks > 0 ? options.numRanks
                                         : (int64_t)lines.size();
  if ((int64_t)lines.size() > config.numRanks)
    return "the schedule CSV has " + std::to_string(lines.size()) +
           " rows, one per rank, but the pipeline has " +
           std::to_string(config.numRanks) + " ranks";
  int64_t k = config.numRanks;
  config.numChunks = options.numChunks > 0
                         ? options.numChunks
                         : std::max<int64_t>(1, maxStage / k + 1);
  config.numMicrobatches = options.numMicrobatches > 0
                               ? options.numMicrobatches
                               : std::max<int64_t>(1, maxMb + 1);
  if (options.kind)
    config.kind = *options.kind;
  else if (hasSplit)
    config.kind = Kind::ZBH1;
  else if (config.numChunks > 1)
    config.kind = Kind::Interleaved1F1B;
  else
    config.kind = Kind::OneFOneB;
  bool split = config.splitsBackward();
  int64_t numStages = config.numVirtualStages();
  if ((inferChunks || inferMicrobatches) &&
      (numStages / k != config.numChunks ||
       numStages > numCells / config.numMicrobatches))
    return "the schedule CSV has " + std::to_string(numCells) +
           " actions, too few for " + std::to_string(k) + " ranks x " +
           std::to_string(config.numChunks) + " chunks x " +
           std::to_string(config.numMicrobatches) +
           " micro-batches (each stage and micro-batch needs a forward)";

  Schedule s;
  s.config = config;
  s.ranks.assign(k, {});
  for (const Cell &cell : cells) {
    std::string at = where(cell.row, cell.column);
    std::string text = std::to_string(cell.stage) + cell.type +
                       std::to_string(cell.microbatch);
    if (cell.stage >= numStages)
      return at + ": '" + text + "': stage " + std::to_string(cell.stage) +
             " is out of range: the pipeline has " + std::to_string(k) +
             " ranks x " + std::to_string(config.numChunks) + " chunks = " +
             std::to_string(numStages) + " stages";
    if (cell.microbatch >= config.numMicrobatches)
      return at + ": '" + text + "': micro-batch " +
             std::to_string(cell.microbatch) + " is out of range: the " +
             "schedule has " + std::to_string(config.numMicrobatches) +
             " micro-batches";
    if (config.rankOf(cell.stage) != cell.row)
      return at + ": '" + text + "': stage " + std::to_string(cell.stage) +
             " runs on rank " + std::to_string(config.rankOf(cell.stage)) +
             " (stage % " + std::to_string(k) + "), not on rank " +
             std::to_string(cell.row) +
             " (row " + std::to_string(cell.row + 1) +
             "); V-shaped placements are not supported";
    Op op;
    switch (cell.type) {
    case 'F':
      op = Op::F;
      break;
    case 'B':
      if (split)
        return at + ": '" + text + "' is a full backward, but " +
               kindName(config.kind) +
               " splits the backward: write I (input gradient) and W "
               "(weight gradient)";
      op = Op::B;
      break;
    case 'I':
      if (!split)
        return at + ": '" + text + "' is an input-gradient backward, but " +
               kindName(config.kind) +
               " does not split the backward: write B (or use zb-h1)";
      op = Op::B;
      break;
    default: // 'W'
      if (!split)
        return at + ": '" + text + "' is a weight-gradient backward, but " +
               kindName(config.kind) +
               " does not split the backward: write B (or use zb-h1)";
      op = Op::W;
      break;
    }
    s.ranks[cell.row].push_back({op, cell.stage, cell.microbatch});
  }

  // Updates, per the kind's policy (Schedule.h).
  int64_t last = config.numMicrobatches - 1;
  for (int64_t r = 0; r < k; ++r) {
    auto &list = s.ranks[r];
    if (config.isSynchronous()) {
      // One U per stage the rank runs, in chunk (= stage) order.
      std::set<int64_t> stages;
      for (const Action &a : list)
        stages.insert(a.stage);
      for (int64_t stage : stages)
        list.push_back({Op::U, stage, last});
      continue;
    }
    std::vector<Action> withUpdates;
    for (const Action &a : list) {
      withUpdates.push_back(a);
      bool due = config.kind == Kind::PipeDream ||
                 a.microbatch % k == k - 1 || a.microbatch == last;
      if (a.op == Op::B && due)
        withUpdates.push_back({Op::U, a.stage, a.microbatch});
    }
    list = std::move(withUpdates);
  }
  out = std::move(s);
  return "";
}

static std::string cellText(const Config &c, const Action &a) {
  char letter = opLetter(a.op);
  if (a.op == Op::B && c.splitsBackward())
    letter = 'I';
  return std::to_string(a.stage) + letter + std::to_string(a.microbatch);
}

std::string exportScheduleCSV(const Schedule &schedule, CSVLayout layout) {
  const Config &c = schedule.config;
  std::vector<std::vector<std::string>> rows(schedule.ranks.size());
  SimResult sim;
  if (layout == CSVLayout::TimeSteps) {
    Costs steps;
    steps.forward = steps.backward = steps.weightGrad = 1;
    steps.update = steps.comm = 0;
    sim = simulate(schedule, steps);
    if (!sim.ok())
      layout = CSVLayout::Compact;
  }
  for (size_t r = 0; r < schedule.ranks.size(); ++r) {
    for (size_t i = 0; i < schedule.ranks[r].size(); ++i) {
      const Action &a = schedule.ranks[r][i];
      if (a.op == Op::U)
        continue;
      if (layout == CSVLayout::Compact) {
        rows[r].push_back(cellText(c, a));
        continue;
      }
      size_t step = (size_t)(sim.timeline[r][i].start + 0.5);
      if (rows[r].size() <= step)
        rows[r].resize(step + 1);
      rows[r][step] = cellText(c, a);
    }
  }
  std::string out;
  for (const auto &row : rows) {
    for (size_t j = 0; j < row.size(); ++j) {
      if (j)
        out += ',';
      out += row[j];
    }
    out += '\n';
  }
  return out;
}

std::string loadScheduleCSVFile(const std::string &path, const Config &config,
                                Schedule &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return path + ": cannot open the schedule CSV";
  std::ostringstream text;
  text << in.rdbuf();
  CSVImportOptions options;
  options.kind = config.kind;
  options.numRanks = config.numRanks;
  options.numMicrobatches = config.numMicrobatches;
  options.numChunks = config.numChunks;
  Schedule s;
  if (std::string err = parseScheduleCSV(text.str(), options, s); !err.empty())
    return path + ": " + err;
  SlotAssignment slots = assignSlots(s);
  if (std::string err = verify(s, &slots); !err.empty())
    return path + ": the custom schedule is invalid: " + err;
  out = std::move(s);
  return "";
}

} // namespace schedule
} // namespace pipe
} // namespace pipedream
