//===- ScheduleReport.cpp - schedule report, trace, timeline ---------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/ScheduleReport.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace pipedream {
namespace pipe {
namespace schedule {

//===----------------------------------------------------------------------===//
// Report
//===----------------------------------------------------------------------===//

Report buildReport(const Schedule &schedule, const ReportOptions &options) {
  const Config &c = schedule.config;
  Report r;
  r.config = c;
  Costs costs = options.costs ? *options.costs : Costs::unit(c);
  r.costSource = costs.perStage.empty() ? "unit" : "per-stage";
  if (options.costs && costs.perStage.empty())
    r.costSource = "uniform";

  SlotAssignment slots = assignSlots(schedule);
  r.error = verify(schedule, &slots);
  if (r.error.empty()) {
    r.sim = simulate(schedule, costs);
    r.error = r.sim.error;
  }
  r.verified = r.error.empty();
  if (r.verified) {
    r.makespan = r.sim.makespan;
    r.bubbleFraction = r.sim.bubbleFraction;
  }

  // Static figures, from the action order alone (valid for any costs).
  int64_t k = c.numRanks, numStages = c.numVirtualStages();
  bool split = c.splitsBackward();
  r.activationSlots.assign(k, 0);
  r.peakActivationBytes.assign(k, 0);
  r.stageWeightVersions.assign(numStages, 1);
  if (r.sim.peakWeightVersions.size() == (size_t)numStages)
    r.stageWeightVersions = r.sim.peakWeightVersions;
  auto memOf = [&](int64_t v) {
    return v < (int64_t)options.memory.size() ? options.memory[v]
                                              : StageMemory{};
  };
  for (int64_t rank = 0; rank < k && rank < (int64_t)schedule.ranks.size();
       ++rank) {
    std::map<int64_t, int64_t> inflight; // stage -> micro-batches
    int64_t count = 0, bytes = 0;
    for (const Action &a : schedule.ranks[rank]) {
      StageMemory m = memOf(a.stage);
      int64_t weightGradBytes = m.weightGradBytes.value_or(m.activationBytes);
      if (a.op == Op::F) {
        ++inflight[a.stage];
        ++count;
        bytes += m.activationBytes;
      } else if (split && a.op == Op::B && inflight[a.stage] > 0) {
        // The forward's stash is released, what W reads is kept.
        bytes += weightGradBytes - m.activationBytes;
      } else if (a.op == (split ? Op::W : Op::B) && inflight[a.stage] > 0) {
        --inflight[a.stage];
        --count;
        bytes -= split ? weightGradBytes : m.activationBytes;
      }
      r.activationSlots[rank] = std::max(r.activationSlots[rank], count);
      r.peakActivationBytes[rank] = std::max(r.peakActivationBytes[rank], bytes);
    }
  }
  r.weightVersions.assign(k, 0);
  r.peakMemoryBytes.assign(k, 0);
  for (int64_t v = 0; v < numStages; ++v) {
    int64_t rank = c.rankOf(v);
    StageMemory m = memOf(v);
    r.weightVersions[rank] += r.stageWeightVersions[v];
    r.peakMemoryBytes[rank] +=
        m.parameterBytes *
            (r.stageWeightVersions[v] + 1 + options.optimizerStates) +
        m.fixedBytes;
  }
  for (int64_t rank = 0; rank < k; ++rank)
    r.peakMemoryBytes[rank] += r.peakActivationBytes[rank];
  return r;
}

llvm::json::Object reportToJSON(const Report &r) {
  const Config &c = r.config;
  llvm::json::Object o;
  o["schedule"] = llvm::json::Object{
      {"kind", kindName(c.kind)},
      {"K", c.numRanks},
      {"V", c.numChunks},
      {"M", c.numMicrobatches},
      {"placement", c.isVShaped() ? "v" : "loop"}};
  if (r.verified) {
    o["bubble_fraction"] = r.bubbleFraction;
    o["makespan"] = r.makespan;
  } else {
    o["bubble_fraction"] = nullptr;
    o["makespan"] = nullptr;
  }
  o["cost_source"] = r.costSource;
  llvm::json::Array stash;
  for (int64_t rank = 0; rank < c.numRanks; ++rank)
    stash.push_back(llvm::json::Object{
        {"rank", rank},
        {"activation_slots", r.activationSlots[rank]},
        {"weight_versions", r.weightVersions[rank]}});
  o["peak_stash"] = std::move(stash);
  llvm::json::Array memory;
  for (int64_t bytes : r.peakMemoryBytes)
    memory.push_back(bytes);
  o["peak_memory_bytes"] = std::move(memory);
  o["verified"] = r.verified;
  if (!r.verified)
    o["error"] = r.error;
  return o;
}

//===----------------------------------------------------------------------===//
// Chrome trace
//===----------------------------------------------------------------------===//

/// `F3 s1`: action, micro-batch, virtual stage.
static std::string sliceName(const Action &a) {
  return std::string(1, opLetter(a.op)) + std::to_string(a.microbatch) +
         " s" + std::to_string(a.stage);
}

std::string traceJSON(const Schedule &s, const Report &r,
                      const ReportOptions &options) {
  const Config &c = s.config;
  llvm::json::Array events;
  std::string title = std::string("pipeline ") + kindName(c.kind) +
                      " K=" + std::to_string(c.numRanks) +
                      " M=" + std::to_string(c.numMicrobatches) +
                      " V=" + std::to_string(c.numChunks);
  events.push_back(llvm::json::Object{{"name", "process_name"},
                                      {"ph", "M"},
                                      {"pid", 0},
                                      {"args", llvm::json::Object{
                                                   {"name", title}}}});
  for (int64_t rank = 0; rank < c.numRanks; ++rank) {
    events.push_back(llvm::json::Object{
        {"name", "thread_name"},
        {"ph", "M"},
        {"pid", 0},
        {"tid", rank},
        {"args", llvm::json::Object{{"name", "rank " + std::to_string(rank)}}}});
    events.push_back(llvm::json::Object{
        {"name", "thread_sort_index"},
        {"ph", "M"},
        {"pid", 0},
        {"tid", rank},
        {"args", llvm::json::Object{{"sort_index", rank}}}});
  }
  if (r.verified) {
    double scale = options.microsPerUnit;
    for (int64_t rank = 0; rank < c.numRanks; ++rank) {
      for (size_t i = 0; i < s.ranks[rank].size(); ++i) {
        const Action &a = s.ranks[rank][i];
        const Slot &sl = r.sim.timeline[rank][i];
        llvm::json::Object args{{"stage", a.stage},
                                {"chunk", c.chunkOf(a.stage)},
                                {"rank", rank},
                                {"microbatch", a.microbatch},
                                {"action", std::string(1, opLetter(a.op))}};
        // Joined actions (torch's compound actions) say so.
        if (a.join == Join::FullBackward)
          args["join"] = "full_backward";
        else if (a.join == Join::Overlap)
          args["join"] = "overlap_f_b";
        events.push_back(llvm::json::Object{
            {"name", sliceName(a)},
            {"cat", std::string(1, opLetter(a.op))},
            {"ph", "X"},
            {"pid", 0},
            {"tid", rank},
            {"ts", sl.start * scale},
            {"dur", (sl.end - sl.start) * scale},
            {"args", std::move(args)}});
      }
    }
  }
  llvm::json::Object root{
      {"traceEvents", std::move(events)},
      {"displayTimeUnit", "ms"},
      {"otherData", llvm::json::Object{
                        {"schedule", kindName(c.kind)},
                        {"bubble_fraction",
                         r.verified ? llvm::json::Value(r.bubbleFraction)
                                    : llvm::json::Value(nullptr)},
                        {"verified", r.verified}}}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return out;
}

//===----------------------------------------------------------------------===//
// SVG timeline
//===----------------------------------------------------------------------===//

static std::string xmlEscape(const std::string &s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += ch;
    }
  }
  return out;
}

/// Base colors (Tableau 10): F blue, B green, W purple, U grey; chunk c is
/// darkened by 25% per chunk so interleaved chunks stay apart.
static std::string colorOf(Op op, int64_t chunk) {
  unsigned rgb;
  switch (op) {
  case Op::F:
    rgb = 0x4e79a7;
    break;
  case Op::B:
    rgb = 0x59a14f;
    break;
  case Op::W:
    rgb = 0xb07aa1;
    break;
  default:
    rgb = 0x7f7f7f;
  }
  double f = std::pow(0.75, (double)chunk);
  unsigned cr = (unsigned)(((rgb >> 16) & 0xff) * f),
           cg = (unsigned)(((rgb >> 8) & 0xff) * f),
           cb = (unsigned)((rgb & 0xff) * f);
  char buf[8];
  std::snprintf(buf, sizeof(buf), "#%02x%02x%02x", cr, cg, cb);
  return buf;
}

static std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0')
    s.pop_back();
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  return s;
}

std::string timelineSVG(const Schedule &s, const Report &r) {
  const Config &c = s.config;
  const double left = 70, top = 48, rowH = 30, gap = 6, plotW = 960;
  double height = top + c.numRanks * (rowH + gap) + 90;
  double width = left + plotW + 30;
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width)
     << "\" height=\"" << num(height) << "\" viewBox=\"0 0 " << num(width)
     << " " << num(height) << "\" font-family=\"Helvetica, Arial, "
     << "sans-serif\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  std::string title = std::string(kindName(c.kind)) +
                      ": K=" + std::to_string(c.numRanks) +
                      " stages, M=" + std::to_string(c.numMicrobatches) +
                      " micro-batches";
  if (c.numChunks > 1)
    title += ", V=" + std::to_string(c.numChunks) + " chunks";
  if (r.verified) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), " \xe2\x80\x94 bubble %.1f%%, makespan %s",
                  100 * r.bubbleFraction, num(r.makespan).c_str());
    title += buf;
    title += r.costSource == "unit" ? " (unit costs)" : "";
  } else {
    title += " \xe2\x80\x94 NOT VERIFIED: " + r.error;
  }
  os << "<text x=\"" << num(left) << "\" y=\"28\" font-size=\"16\" "
     << "font-weight=\"bold\">" << xmlEscape(title) << "</text>\n";

  double makespan = r.verified && r.makespan > 0 ? r.makespan : 1;
  double scale = plotW / makespan;
  for (int64_t rank = 0; rank < c.numRanks; ++rank) {
    double y = top + rank * (rowH + gap);
    os << "<text x=\"" << num(left - 8) << "\" y=\"" << num(y + rowH / 2 + 4)
       << "\" font-size=\"12\" text-anchor=\"end\">rank " << rank
       << "</text>\n";
    os << "<rect x=\"" << num(left) << "\" y=\"" << num(y) << "\" width=\""
       << num(plotW) << "\" height=\"" << num(rowH)
       << "\" fill=\"#f2f2f2\"/>\n";
    if (!r.verified)
      continue;
    for (size_t i = 0; i < s.ranks[rank].size(); ++i) {
      const Action &a = s.ranks[rank][i];
      const Slot &sl = r.sim.timeline[rank][i];
      double x = left + sl.start * scale, w = (sl.end - sl.start) * scale;
      std::string color = colorOf(a.op, c.chunkOf(a.stage));
      std::string tip = sliceName(a);
      if (a.join == Join::Overlap)
        tip += " (overlapped with the F before it)";
      else if (a.join == Join::FullBackward)
        tip += " (with its B: one full backward)";
      if (w < 1.5) { // zero-length (U with unit costs): a tick
        os << "<rect x=\"" << num(x - 1) << "\" y=\"" << num(y)
           << "\" width=\"2\" height=\"" << num(rowH) << "\" fill=\""
           << color << "\"><title>" << tip << "</title></rect>\n";
        continue;
      }
      os << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\""
         << num(w) << "\" height=\"" << num(rowH) << "\" fill=\"" << color
         << "\" stroke=\"white\" stroke-width=\"1\"><title>" << tip
         << "</title></rect>\n";
      // An overlapped pair is framed as one block (DualPipe's F&B).
      if (a.join == Join::Overlap && i > 0) {
        const Slot &prev = r.sim.timeline[rank][i - 1];
        os << "<rect x=\"" << num(left + prev.start * scale) << "\" y=\""
           << num(y) << "\" width=\"" << num((sl.end - prev.start) * scale)
           << "\" height=\"" << num(rowH)
           << "\" fill=\"none\" stroke=\"black\" stroke-width=\"2\"/>\n";
      }
      if (w >= 9)
        os << "<text x=\"" << num(x + w / 2) << "\" y=\""
           << num(y + rowH / 2 + 4) << "\" font-size=\""
           << (w >= 16 ? 12 : 9)
           << "\" fill=\"white\" text-anchor=\"middle\">" << a.microbatch
           << "</text>\n";
    }
  }
  // Time axis.
  double axisY = top + c.numRanks * (rowH + gap) + 4;
  os << "<line x1=\"" << num(left) << "\" y1=\"" << num(axisY) << "\" x2=\""
     << num(left + plotW) << "\" y2=\"" << num(axisY)
     << "\" stroke=\"black\"/>\n";
  double step = std::pow(10.0, std::floor(std::log10(makespan / 5)));
  for (double m : {1.0, 2.0, 5.0})
    if (makespan / (step * m) <= 12) {
      step *= m;
      break;
    }
  for (double t = 0; t <= makespan + 1e-9; t += step) {
    double x = left + t * scale;
    os << "<line x1=\"" << num(x) << "\" y1=\"" << num(axisY) << "\" x2=\""
       << num(x) << "\" y2=\"" << num(axisY + 5) << "\" stroke=\"black\"/>\n";
    os << "<text x=\"" << num(x) << "\" y=\"" << num(axisY + 18)
       << "\" font-size=\"11\" text-anchor=\"middle\">" << num(t)
       << "</text>\n";
  }
  os << "<text x=\"" << num(left + plotW) << "\" y=\"" << num(axisY + 32)
     << "\" font-size=\"11\" text-anchor=\"end\">time ("
     << (r.costSource == "unit" ? "cost units: F = 1" : "seconds")
     << ")</text>\n";
  // Legend.
  double ly = axisY + 46, lx = left;
  std::vector<std::pair<Op, std::string>> legend{
      {Op::F, "F forward"},
      {Op::B, c.splitsBackward() ? "B input gradient" : "B backward"}};
  if (c.splitsBackward())
    legend.push_back({Op::W, "W weight gradient"});
  legend.push_back({Op::U, "U optimizer update"});
  for (auto &[op, label] : legend) {
    os << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly) << "\" width=\"14\""
       << " height=\"14\" fill=\"" << colorOf(op, 0) << "\"/>\n";
    os << "<text x=\"" << num(lx + 20) << "\" y=\"" << num(ly + 11)
       << "\" font-size=\"12\">" << xmlEscape(label) << "</text>\n";
    lx += 160;
  }
  if (c.numChunks > 1)
    os << "<text x=\"" << num(lx) << "\" y=\"" << num(ly + 11)
       << "\" font-size=\"12\">darker: later chunk</text>\n";
  os << "<text x=\"" << num(left) << "\" y=\"" << num(ly + 32)
     << "\" font-size=\"11\" fill=\"#555\">box label: micro-batch; grey "
     << "lane: idle (bubble)</text>\n";
  os << "</svg>\n";
  return os.str();
}

std::string writeTextFile(const std::string &path,
                          const std::string &contents) {
  if (path == "-") {
    llvm::outs() << contents;
    llvm::outs().flush();
    return "";
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return "cannot write " + path + ": " + ec.message();
  os << contents;
  os.close();
  if (os.has_error())
    return "cannot write " + path + ": " + os.error().message();
  return "";
}

} // namespace schedule
} // namespace pipe
} // namespace pipedream
