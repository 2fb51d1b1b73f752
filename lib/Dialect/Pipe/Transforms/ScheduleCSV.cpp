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

/// One compute action of the CSV (a cell, or one sub-action of an
/// overlapped cell).
struct Cell {
  int64_t row, column; // 0-based
  std::string text;    // the whole cell, for messages
  int64_t stage;
  char type; // F, B, I, W
  int64_t microbatch;
  bool overlapped; // the second sub-action of an OVERLAP_F_B cell
};

/// A communication or FSDP action: checked, then ignored.
struct IgnoredCell {
  int64_t row, column;
  std::string text;
  int64_t stage;
  int64_t microbatch; // -1: none
};

std::string trim(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace((unsigned char)s[b]))
    ++b;
  while (e > b && std::isspace((unsigned char)s[e - 1]))
    --e;
  return s.substr(b, e - b);
}

std::string where(int64_t row, int64_t column, const std::string &text) {
  return "row " + std::to_string(row + 1) + ", column " +
         std::to_string(column + 1) + ": '" + text + "'";
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

/// torch's action types that carry no computation. Communication: pipedream
/// derives it from the compute order. FSDP: no sharded parameters here.
struct IgnoredType {
  const char *name;
  bool hasMicrobatch;
  bool isComm;
};
const IgnoredType kIgnoredTypes[] = {
    {"SEND_F", true, true},       {"RECV_F", true, true},
    {"SEND_B", true, true},       {"RECV_B", true, true},
    {"WAIT_SEND_F", true, true},  {"WAIT_SEND_B", true, true},
    {"UNSHARD", false, false},    {"RESHARD", false, false},
    {"REDUCE_GRAD", false, false}, {"WAIT_REDUCE_GRAD", false, false},
};

const char *const kActionSyntax =
    "{stage}{F|B|I|W}{microbatch}, e.g. 0F1; or torch's SEND_F, RECV_F, "
    "SEND_B, RECV_B, WAIT_SEND_F, WAIT_SEND_B, UNSHARD, RESHARD, "
    "REDUCE_GRAD, WAIT_REDUCE_GRAD, (a;b)OVERLAP_F_B";

/// Parses one action `s` (a cell or a sub-action) of the cell `text`.
/// Appends to `cells` or `ignored`; returns "" or the error.
std::string parseAction(const std::string &s, int64_t row, int64_t column,
                        const std::string &text, bool overlapped,
                        std::vector<Cell> &cells,
                        std::vector<IgnoredCell> &ignored) {
  std::string at = where(row, column, text);
  size_t pos = 0;
  int64_t stage = 0, mb = 0;
  if (!parseNumber(s, pos, stage))
    return at + " is not an action (" + kActionSyntax + ")";
  size_t typeStart = pos;
  while (pos < s.size() && !std::isdigit((unsigned char)s[pos]))
    ++pos;
  std::string type = s.substr(typeStart, pos - typeStart);
  for (const IgnoredType &t : kIgnoredTypes) {
    if (type != t.name)
      continue;
    if (overlapped)
      return at + ": OVERLAP_F_B pairs compute actions, not " + type;
    int64_t ignoredMb = -1;
    if (t.hasMicrobatch && !parseNumber(s, pos, ignoredMb))
      return at + " has no micro-batch (e.g. " + std::to_string(stage) +
             type + "0)";
    if (pos != s.size())
      return at + " has trailing characters after the " +
             (t.hasMicrobatch ? "micro-batch" : "action type");
    ignored.push_back({row, column, text, stage, ignoredMb});
    return "";
  }
  if (type != "F" && type != "B" && type != "I" && type != "W")
    return at + " has unknown action type '" + type +
           "' (expected F, B, I or W, or one of torch's SEND_F, RECV_F, "
           "SEND_B, RECV_B, WAIT_SEND_F, WAIT_SEND_B, UNSHARD, RESHARD, "
           "REDUCE_GRAD, WAIT_REDUCE_GRAD)";
  if (!parseNumber(s, pos, mb))
    return at + " has no micro-batch (e.g. " + std::to_string(stage) + type +
           "0)";
  if (pos != s.size())
    return at + " has trailing characters after the micro-batch";
  cells.push_back({row, column, text, stage, type[0], mb, overlapped});
  return "";
}

/// Parses one cell (not empty).
std::string parseCell(const std::string &s, int64_t row, int64_t column,
                      std::vector<Cell> &cells,
                      std::vector<IgnoredCell> &ignored) {
  if (s.front() != '(')
    return parseAction(s, row, column, s, false, cells, ignored);
  std::string at = where(row, column, s);
  size_t close = s.find(')');
  if (close == std::string::npos)
    return at + " has no ')' (an overlapped action is (a;b)OVERLAP_F_B)";
  std::string type = trim(s.substr(close + 1));
  if (type != "OVERLAP_F_B")
    return at + " has unknown action type '" + type +
           "' after its sub-actions (expected OVERLAP_F_B)";
  std::vector<std::string> subs;
  std::string sub;
  std::istringstream is(s.substr(1, close - 1));
  while (std::getline(is, sub, ';'))
    if (!trim(sub).empty())
      subs.push_back(trim(sub));
  size_t before = cells.size(), beforeIgnored = ignored.size();
  for (size_t i = 0; i < subs.size(); ++i)
    if (std::string err = parseAction(subs[i], row, column, s, i > 0, cells,
                                      ignored);
        !err.empty())
      return err;
  if (subs.size() != 2 || ignored.size() != beforeIgnored ||
      cells[before].type != 'F' ||
      (cells[before + 1].type != 'B' && cells[before + 1].type != 'I'))
    return at + ": OVERLAP_F_B pairs one forward with one backward, "
                "(F;B) or (F;I)";
  return "";
}

std::string describeCell(const Cell &c) { return where(c.row, c.column, c.text); }

} // namespace

std::string parseScheduleCSV(const std::string &text,
                             const CSVImportOptions &options, Schedule &out,
                             std::string *note) {
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
  std::vector<IgnoredCell> ignored;
  int64_t maxStage = -1, maxMb = -1;
  bool hasSplit = false, hasOverlap = false;
  for (size_t r = 0; r < lines.size(); ++r) {
    // csv.writer quotes a cell only when it holds a comma, quote or line
    // break, which no action does; a quoted cell is unquoted all the same.
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
      size_t before = cells.size();
      if (std::string err = parseCell(s, r, c, cells, ignored); !err.empty())
        return err;
      for (size_t i = before; i < cells.size(); ++i) {
        hasSplit |= cells[i].type == 'I' || cells[i].type == 'W';
        hasOverlap |= cells[i].overlapped;
        maxStage = std::max(maxStage, cells[i].stage);
        maxMb = std::max(maxMb, cells[i].microbatch);
      }
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
      return describeCell(cell) + ": " +
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
  if (!inferMicrobatches && maxMb + 1 < config.numMicrobatches)
    return "the schedule CSV runs micro-batches 0 to " + std::to_string(maxMb) +
           ", but the pipeline runs " + std::to_string(config.numMicrobatches) +
           " micro-batches";
  // Placement: V when a second-chunk stage sits on the row 2K-1-s.
  bool vShaped = false;
  for (const Cell &cell : cells)
    if (cell.stage >= k && cell.stage < 2 * k &&
        cell.row == 2 * k - 1 - cell.stage && cell.row != cell.stage % k)
      vShaped = true;
  if (options.kind)
    config.kind = *options.kind;
  else if (vShaped)
    config.kind = hasOverlap ? Kind::DualPipeV : Kind::ZBV;
  else if (hasSplit)
    config.kind = config.numChunks > 1 ? Kind::InterleavedZB : Kind::ZBH1;
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

  auto placement = [&] {
    return std::string(config.isVShaped() ? "V placement: stage s and 2K-1-s "
                                            "on rank s"
                                          : "loop placement: stage % " +
                                                std::to_string(k));
  };
  auto rangeError = [&](const std::string &at, int64_t stage,
                        int64_t mb) -> std::string {
    if (stage >= numStages)
      return at + ": stage " + std::to_string(stage) +
             " is out of range: the pipeline has " + std::to_string(k) +
             " ranks x " + std::to_string(config.numChunks) + " chunks = " +
             std::to_string(numStages) + " stages";
    if (mb >= config.numMicrobatches)
      return at + ": micro-batch " + std::to_string(mb) +
             " is out of range: the schedule has " +
             std::to_string(config.numMicrobatches) + " micro-batches (0 to " +
             std::to_string(config.numMicrobatches - 1) + ")";
    return "";
  };
  // A cell's range error, else its stage not running on its row's rank.
  auto cellError = [&](const std::string &at, int64_t stage, int64_t mb,
                       int64_t row) -> std::string {
    if (std::string err = rangeError(at, stage, mb); !err.empty())
      return err;
    if (config.rankOf(stage) != row)
      return at + ": stage " + std::to_string(stage) + " runs on rank " +
             std::to_string(config.rankOf(stage)) + " (" +
             kindName(config.kind) + "'s " + placement() + "), not on rank " +
             std::to_string(row) + " (row " + std::to_string(row + 1) + ")";
    return "";
  };
  // With M inferred, every micro-batch below the largest needs a forward:
  // a gap is a numbering error in the file (say so here, not later as a
  // backward the verifier finds missing).
  if (inferMicrobatches) {
    std::set<int64_t> forwards;
    for (const Cell &cell : cells)
      if (cell.type == 'F')
        forwards.insert(cell.microbatch);
    for (int64_t m = 0; m <= maxMb; ++m)
      if (!forwards.count(m)) {
        const Cell *largest = nullptr;
        for (const Cell &cell : cells)
          if (cell.microbatch == maxMb)
            largest = &cell;
        return describeCell(*largest) + ": micro-batch " +
               std::to_string(maxMb) +
               " is out of range: the file has no forward of micro-batch " +
               std::to_string(m) +
               " (micro-batches are numbered 0 to M-1 without gaps)";
      }
  }

  Schedule s;
  s.config = config;
  s.ranks.assign(k, {});
  for (const Cell &cell : cells) {
    std::string at = describeCell(cell);
    if (std::string err = cellError(at, cell.stage, cell.microbatch, cell.row);
        !err.empty())
      return err;
    auto &list = s.ranks[cell.row];
    Join join = cell.overlapped ? Join::Overlap : Join::None;
    switch (cell.type) {
    case 'F':
      list.push_back({Op::F, cell.stage, cell.microbatch});
      break;
    case 'B':
      list.push_back({Op::B, cell.stage, cell.microbatch, join});
      // A full backward of a split schedule: input and weight gradient.
      if (split)
        list.push_back({Op::W, cell.stage, cell.microbatch,
                        Join::FullBackward});
      break;
    case 'I':
      if (!split)
        return at + " is an input-gradient backward, but " +
               kindName(config.kind) +
               " does not split the backward: write B (or use zb-h1)";
      list.push_back({Op::B, cell.stage, cell.microbatch, join});
      break;
    default: // 'W'
      if (!split)
        return at + " is a weight-gradient backward, but " +
               kindName(config.kind) +
               " does not split the backward: write B (or use zb-h1)";
      list.push_back({Op::W, cell.stage, cell.microbatch});
      break;
    }
  }
  int64_t numComm = 0, numFSDP = 0;
  for (const IgnoredCell &cell : ignored) {
    std::string at = where(cell.row, cell.column, cell.text);
    if (std::string err = cellError(at, cell.stage, cell.microbatch, cell.row);
        !err.empty())
      return err;
    ++(cell.microbatch >= 0 || cell.text.find("SEND") != std::string::npos
           ? numComm
           : numFSDP);
  }
  if (note && (numComm || numFSDP)) {
    *note = "ignored";
    if (numComm)
      *note += " " + std::to_string(numComm) +
               " communication actions (SEND/RECV/WAIT_SEND: pipedream "
               "derives communication from the compute order)";
    if (numComm && numFSDP)
      *note += " and";
    if (numFSDP)
      *note += " " + std::to_string(numFSDP) +
               " FSDP actions (UNSHARD/RESHARD/REDUCE_GRAD: parameters are "
               "not sharded here)";
  }

  // Updates, per the kind's policy (Schedule.h).
  int64_t last = config.numMicrobatches - 1;
  for (int64_t r = 0; r < k; ++r) {
    auto &list = s.ranks[r];
    if (config.isSynchronous()) {
      // One U per stage the rank runs, in chunk order.
      std::set<int64_t> chunks;
      for (const Action &a : list)
        chunks.insert(config.chunkOf(a.stage));
      for (int64_t chunk : chunks)
        list.push_back({Op::U, config.stageOf(r, chunk), last});
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

/// torch's text of the group of joined actions starting at `i` (advances
/// `i` past it): `0F1`, `0I1`, `0W1`, a full backward `0B1`, or
/// `(0F1;7B0)OVERLAP_F_B`.
static std::string groupText(const Config &c, const std::vector<Action> &list,
                             size_t &i) {
  auto one = [&](size_t &j) {
    const Action &a = list[j++];
    char letter = opLetter(a.op);
    if (a.op == Op::B && c.splitsBackward()) {
      letter = 'I';
      if (j < list.size() && list[j].join == Join::FullBackward) {
        letter = 'B';
        ++j;
      }
    }
    return std::to_string(a.stage) + letter + std::to_string(a.microbatch);
  };
  std::string first = one(i);
  if (i < list.size() && list[i].join == Join::Overlap)
    return "(" + first + ";" + one(i) + ")OVERLAP_F_B";
  return first;
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
    const auto &list = schedule.ranks[r];
    for (size_t i = 0; i < list.size();) {
      if (list[i].op == Op::U) {
        ++i;
        continue;
      }
      size_t first = i;
      std::string text = groupText(c, list, i);
      if (layout == CSVLayout::Compact) {
        rows[r].push_back(text);
        continue;
      }
      size_t step = (size_t)(sim.timeline[r][first].start + 0.5);
      if (rows[r].size() <= step)
        rows[r].resize(step + 1);
      rows[r][step] = text;
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

std::string readScheduleCSVFile(const std::string &path,
                                std::optional<Kind> kind, int64_t numRanks,
                                int64_t numMicrobatches, int64_t numChunks,
                                Schedule &out, std::string *note) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return path + ": cannot open the schedule CSV";
  std::ostringstream text;
  text << in.rdbuf();
  CSVImportOptions options;
  options.kind = kind;
  options.numRanks = numRanks;
  options.numMicrobatches = numMicrobatches;
  options.numChunks = numChunks;
  Schedule s;
  if (std::string err = parseScheduleCSV(text.str(), options, s, note);
      !err.empty())
    return path + ": " + err;
  SlotAssignment slots = assignSlots(s);
  if (std::string err = verify(s, &slots); !err.empty())
    return path + ": the custom schedule is invalid: " + err;
  out = std::move(s);
  return "";
}

std::string loadScheduleCSVFile(const std::string &path, const Config &config,
                                Schedule &out, std::string *note) {
  return readScheduleCSVFile(path, config.kind, config.numRanks,
                             config.numMicrobatches, config.numChunks, out,
                             note);
}

} // namespace schedule
} // namespace pipe
} // namespace pipedream
