//===- UnrollSchedule.cpp - pipe-unroll-schedule ---------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/IR/PipeOps.h"
#include "pipedream/Dialect/Pipe/Transforms/Passes.h"
#include "pipedream/Dialect/Pipe/Transforms/ProjectRanks.h"
#include "pipedream/Dialect/Pipe/Transforms/Schedule.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleAttrs.h"
#include "pipedream/Dialect/Pipe/Transforms/ScheduleCSV.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace pipedream::pipe {
#define GEN_PASS_DEF_UNROLLSCHEDULEPASS
#include "pipedream/Dialect/Pipe/Transforms/Passes.h.inc"
} // namespace pipedream::pipe

using namespace mlir;
using namespace pipedream::pipe;
namespace sched = pipedream::pipe::schedule;

namespace {

struct UnrollSchedulePass
    : pipedream::pipe::impl::UnrollSchedulePassBase<UnrollSchedulePass> {
  using Base::Base;
  void runOnOperation() override;
};

} // namespace

void UnrollSchedulePass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<sched::Kind> kindOpt = sched::parseKind(kind);
  if (!kindOpt) {
    module.emitError() << "pipe-unroll-schedule: unknown schedule kind '"
                       << kind
                       << "' (" << sched::kindNameList() << ")";
    return signalPassFailure();
  }
  // Stage functions by (stage attribute, action letter).
  std::map<std::pair<std::pair<int64_t, int64_t>, char>, func::FuncOp> fns;
  int64_t maxIndex = -1, maxChunk = -1;
  for (auto fn : module.getOps<func::FuncOp>()) {
    auto stage = fn->getAttrOfType<StageAttr>("pipe.stage");
    StringRef name = fn.getSymName();
    if (!stage || name.size() < 2 || name[name.size() - 2] != '_')
      continue;
    char letter = name.back();
    if (letter != 'F' && letter != 'B' && letter != 'W' && letter != 'U' &&
        letter != 'N')
      continue;
    fns[{{stage.getIndex(), stage.getChunk()}, letter}] = fn;
    maxIndex = std::max(maxIndex, stage.getIndex());
    maxChunk = std::max(maxChunk, stage.getChunk());
  }
  if (maxIndex < 0) {
    module.emitError() << "pipe-unroll-schedule: no stage functions (func.func "
                          "@..._F/_B/_W/_U with a pipe.stage attribute)";
    return signalPassFailure();
  }
  sched::Config config{*kindOpt, maxIndex + 1, numMicrobatches, numChunks};
  if (std::string err = sched::validate(config); !err.empty()) {
    module.emitError() << "pipe-unroll-schedule: " << err;
    return signalPassFailure();
  }
  if (maxChunk + 1 != numChunks) {
    module.emitError() << "pipe-unroll-schedule: the stage functions have "
                       << maxChunk + 1 << " chunks, virtual=" << numChunks;
    return signalPassFailure();
  }
  int64_t k = config.numRanks, numStages = config.numVirtualStages();
  auto stageAttrOf = [&](int64_t v) {
    return StageAttr::getForVirtualIndex(&getContext(), v, k,
                                         config.isVShaped());
  };
  auto fnOf = [&](int64_t v, char letter) -> func::FuncOp {
    auto it = fns.find({{config.rankOf(v), config.chunkOf(v)}, letter});
    return it == fns.end() ? func::FuncOp() : it->second;
  };
  // The stage functions follow the kind's placement (loop, or the V of
  // zb-v and dualpipe-v: the second chunk reversed).
  for (auto &[key, fn] : fns) {
    auto stage = fn->getAttrOfType<StageAttr>("pipe.stage");
    StageAttr expected = stageAttrOf(stage.getVirtualIndex(k));
    if (stage != expected) {
      fn.emitError() << "pipe-unroll-schedule: stage function @"
                     << fn.getSymName() << " has " << stage << ", but "
                     << kind << " places its virtual stage "
                     << stage.getVirtualIndex(k) << " at " << expected
                     << (config.isVShaped()
                             ? " (V placement: stage s and 2K-1-s on rank s)"
                             : " (loop placement: stage v on rank v % K)");
      return signalPassFailure();
    }
  }
  // Gradient clipping: every stage has an N (pipe-build-stage-training's
  // clip-grad-norm), run between the last gradient and the first update of
  // a synchronous step.
  bool clips =
      llvm::any_of(fns, [](auto &entry) { return entry.first.second == 'N'; });
  if (clips && !config.isSynchronous()) {
    module.emitError() << "pipe-unroll-schedule: gradient clipping (the _N "
                          "stage functions) needs a synchronous schedule, "
                          "not "
                       << kind;
    return signalPassFailure();
  }
  // Every needed function exists.
  std::string letters = config.splitsBackward() ? "FBWU" : "FBU";
  if (clips)
    letters += 'N';
  for (int64_t v = 0; v < numStages; ++v)
    for (char letter : letters)
      if (!fnOf(v, letter)) {
        module.emitError() << "pipe-unroll-schedule: missing stage function "
                           << letter << " of stage " << config.rankOf(v)
                           << " chunk " << config.chunkOf(v);
        return signalPassFailure();
      }

  sched::Schedule schedule = sched::buildSchedule(config);
  if (!scheduleCsv.empty()) {
    // A user's schedule (torch CSV) replaces the generated one, verified.
    std::string note;
    if (std::string err =
            sched::loadScheduleCSVFile(scheduleCsv, config, schedule, &note);
        !err.empty()) {
      module.emitError() << "pipe-unroll-schedule: " << err;
      return signalPassFailure();
    }
    if (!note.empty())
      module.emitRemark() << "pipe-unroll-schedule: " << scheduleCsv << ": "
                          << note;
  }
  sched::SlotAssignment slots = sched::assignSlots(schedule);
  sched::SimResult sim =
      sched::simulate(schedule, sched::Costs::unit(config));
  if (!sim.ok()) {
    module.emitError() << "pipe-unroll-schedule: internal error: "
                       << sim.error;
    return signalPassFailure();
  }
  // The value arguments and results of the stage functions, by their
  // attributes (docs/Pipe.md, "Stage functions").
  struct ValueRole {
    enum Kind { Input, Recv, Send, Residual, Grad, Carry, Loss } kind;
    int64_t index = 0;   // edge, residual or carry number
    std::string name;    // Input
  };
  auto roleOf = [](func::FuncOp fn, bool isResult,
                   unsigned i) -> std::optional<ValueRole> {
    auto attr = [&](StringRef name) {
      return isResult ? fn.getResultAttr(i, name) : fn.getArgAttr(i, name);
    };
    auto index = [&](StringRef name) {
      return cast<IntegerAttr>(attr(name)).getInt();
    };
    if (auto input = dyn_cast_or_null<StringAttr>(attr("pipe.input")))
      return ValueRole{ValueRole::Input, 0, input.getValue().str()};
    if (isa_and_nonnull<IntegerAttr>(attr("pipe.recv")))
      return ValueRole{ValueRole::Recv, index("pipe.recv"), ""};
    if (isa_and_nonnull<IntegerAttr>(attr("pipe.send")))
      return ValueRole{ValueRole::Send, index("pipe.send"), ""};
    if (isa_and_nonnull<IntegerAttr>(attr("nn.residual")))
      return ValueRole{ValueRole::Residual, index("nn.residual"), ""};
    if (isa_and_nonnull<IntegerAttr>(attr("pipe.grad")))
      return ValueRole{ValueRole::Grad, index("pipe.grad"), ""};
    if (isa_and_nonnull<IntegerAttr>(attr("nn.carry")))
      return ValueRole{ValueRole::Carry, index("nn.carry"), ""};
    auto role = dyn_cast_or_null<StringAttr>(attr("nn.role"));
    if (isResult && role && role.getValue() == "loss")
      return ValueRole{ValueRole::Loss, 0, ""};
    return std::nullopt;
  };
  auto fail = [&](func::FuncOp fn, const Twine &message) {
    fn.emitError() << "pipe-unroll-schedule: " << message
                   << " (see the calling convention in the pass description)";
    signalPassFailure();
  };

  // Edges: producer and consumer virtual stage; program inputs; slot sizes.
  std::map<int64_t, int64_t> producerOf, consumerOf;
  SmallVector<std::pair<std::string, Type>> inputs;
  std::map<std::string, int64_t> inputStage;
  std::vector<int64_t> residualsPerRank(k, 0), carriesPerRank(k, 0);
  Type lossType;
  for (int64_t v = 0; v < numStages; ++v) {
    for (char letter : std::string(config.splitsBackward() ? "FBWU" : "FBU")) {
      func::FuncOp fn = fnOf(v, letter);
      for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
        if (isBoundArgument(fn, i))
          continue;
        std::optional<ValueRole> role = roleOf(fn, false, i);
        bool allowed =
            role && ((letter == 'F' && (role->kind == ValueRole::Input ||
                                        role->kind == ValueRole::Recv)) ||
                     (letter == 'B' && (role->kind == ValueRole::Residual ||
                                        role->kind == ValueRole::Grad)) ||
                     (letter == 'W' && (role->kind == ValueRole::Residual ||
                                        role->kind == ValueRole::Carry)));
        if (!allowed)
          return fail(fn, llvm::Twine(letter) + " argument " + Twine(i) +
                              " is neither bound (nn.param, nn.role grad/"
                              "state) nor a value this action receives");
        if (role->kind == ValueRole::Input) {
          if (!inputStage.count(role->name)) {
            inputStage[role->name] = v;
            inputs.push_back({role->name, fn.getArgumentTypes()[i]});
          }
        } else if (role->kind == ValueRole::Recv) {
          if (consumerOf.count(role->index))
            return fail(fn, "edge " + Twine(role->index) +
                                " is received by two stages");
          consumerOf[role->index] = v;
        } else if (role->kind == ValueRole::Residual) {
          int64_t &n = residualsPerRank[config.rankOf(v)];
          n = std::max(n, role->index + 1);
        } else if (role->kind == ValueRole::Carry) {
          int64_t &n = carriesPerRank[config.rankOf(v)];
          n = std::max(n, role->index + 1);
        }
      }
      for (unsigned i = 0, e = fn.getNumResults(); i < e; ++i) {
        if (isBoundResult(fn, i))
          continue;
        std::optional<ValueRole> role = roleOf(fn, true, i);
        bool allowed =
            role && ((letter == 'F' && (role->kind == ValueRole::Send ||
                                        role->kind == ValueRole::Residual ||
                                        role->kind == ValueRole::Loss)) ||
                     (letter == 'B' && (role->kind == ValueRole::Grad ||
                                        role->kind == ValueRole::Carry)));
        if (!allowed)
          return fail(fn, llvm::Twine(letter) + " result " + Twine(i) +
                              " is neither bound (nn.updates) nor a value "
                              "this action produces");
        if (role->kind == ValueRole::Send) {
          if (producerOf.count(role->index))
            return fail(fn, "edge " + Twine(role->index) +
                                " is sent by two stages");
          producerOf[role->index] = v;
        } else if (role->kind == ValueRole::Loss) {
          if (v != numStages - 1)
            return fail(fn, "only the last stage returns the loss");
          lossType = fn.getResultTypes()[i];
        }
      }
    }
  }
  for (auto [edge, producer] : producerOf) {
    auto it = consumerOf.find(edge);
    if (it == consumerOf.end() || it->second <= producer)
      return fail(fnOf(producer, 'F'),
                  "edge " + Twine(edge) +
                      " must be received by exactly one later stage");
  }
  for (auto [edge, consumer] : consumerOf)
    if (!producerOf.count(edge))
      return fail(fnOf(consumer, 'F'),
                  "edge " + Twine(edge) + " is received but never sent");
  // Residuals W also reads: B restores them (a restore frees the slot), so
  // they are stashed again right after B.
  std::map<int64_t, std::set<int64_t>> weightResiduals;
  if (config.splitsBackward())
    for (int64_t v = 0; v < numStages; ++v) {
      func::FuncOp w = fnOf(v, 'W');
      for (unsigned i = 0, e = w.getNumArguments(); i < e; ++i)
        if (!isBoundArgument(w, i))
          if (std::optional<ValueRole> role = roleOf(w, false, i);
              role && role->kind == ValueRole::Residual)
            weightResiduals[v].insert(role->index);
    }
  // Slot layout per (stage, micro-batch): residuals, then carries.
  std::vector<int64_t> perSlot(k);
  for (int64_t r = 0; r < k; ++r)
    perSlot[r] = std::max<int64_t>(1, residualsPerRank[r] + carriesPerRank[r]);

  // Global order: by start time, then rank, then position in the rank.
  std::vector<std::tuple<double, int64_t, int64_t>> order;
  for (int64_t r = 0; r < k; ++r)
    for (size_t i = 0; i < schedule.ranks[r].size(); ++i)
      order.push_back({sim.timeline[r][i].start, r, (int64_t)i});
  std::sort(order.begin(), order.end());

  // Shared weights (docs/Pipe.md, "Shared weights"): a weight whose copies
  // the U of stages on two or more ranks update is one parameter (each
  // holder's B, W when split, adds its part into the rank's `grad:<w>`; a
  // holder whose reads carry no gradient adds nothing). Before each update
  // of it, every holder sums its accumulator with the others'
  // (pipe.all_reduce_grad), right before the U of the stage that applies it
  // on that rank (pipe-build-stage-training gives each rank one).
  struct SharedWeight {
    std::string name;
    Type type;
    SmallVector<int64_t> stages;         // virtual stages adding into or applying it
    std::map<int64_t, int64_t> ownerOf;  // rank -> virtual stage whose U applies it
  };
  std::map<std::string, SharedWeight> sharedByName;
  {
    char gradLetter = config.splitsBackward() ? 'W' : 'B';
    std::map<std::string, std::set<int64_t>> stagesOf, addingRanks;
    for (int64_t v = 0; v < numStages; ++v)
      for (auto &[name, type] : gradientAccumulators(fnOf(v, 'U'))) {
        if (name == PipeDialect::kGradNormWeight)
          continue; // every stage's, summed over all of them (below)
        SharedWeight &w = sharedByName[name];
        w.name = name;
        w.type = type;
        stagesOf[name].insert(v);
        if (!w.ownerOf.insert({config.rankOf(v), v}).second)
          return fail(fnOf(v, 'U'),
                      "two stages of rank " + Twine(config.rankOf(v)) + " update '" +
                          name + "'");
      }
    for (int64_t v = 0; v < numStages; ++v)
      for (auto &[name, type] : gradientAccumulators(fnOf(v, gradLetter))) {
        stagesOf[name].insert(v);
        addingRanks[name].insert(config.rankOf(v));
      }
    for (auto &[name, ranks] : addingRanks) {
      auto it = sharedByName.find(name);
      for (int64_t r : ranks)
        if (it == sharedByName.end() || !it->second.ownerOf.count(r))
          return fail(fnOf(*stagesOf[name].begin(), gradLetter),
                      "no stage of rank " + Twine(r) + " updates '" + name +
                          "', whose gradient it accumulates");
    }
    for (auto it = sharedByName.begin(); it != sharedByName.end();) {
      if (it->second.ownerOf.size() < 2) {
        it = sharedByName.erase(it);
        continue;
      }
      it->second.stages.assign(stagesOf[it->first].begin(),
                               stagesOf[it->first].end());
      ++it;
    }
  }
  // The global order with the all-reduces: each rank's items are its
  // actions, an all-reduce before the j-th U of each stage that applies a
  // shared weight; items are taken in start-time order, an action once the
  // actions it receives values from are placed, an all-reduce once every
  // rank of its group has reached it (a rendezvous, as the collective is).
  // Where that order deadlocks (a rank's all-reduce before its U would wait
  // for a peer that first needs this rank's later compute: ALBERT's shared
  // layers under zb-v), a synchronous schedule defers its updates: each
  // rank runs all its F, B and W first, then its all-reduces in one order
  // common to all ranks (weight name, update), then its U in their order.
  // Results are the same (a U of a synchronous step only has to follow its
  // stage's gradients); the updates run later.
  // Gradient clipping: after its all-reduces, each rank runs the N of each
  // of its stages, then the sum of the squared norms over every stage,
  // then its updates (which all wait for it: the updates are deferred).
  SharedWeight gradNorm;
  if (clips) {
    gradNorm.name = PipeDialect::kGradNormWeight.str();
    for (int64_t v = 0; v < numStages; ++v) {
      gradNorm.stages.push_back(v);
      gradNorm.ownerOf.insert({config.rankOf(v), v});
      for (auto &[name, type] : gradientAccumulators(fnOf(v, 'N')))
        if (name == PipeDialect::kGradNormWeight)
          gradNorm.type = type;
    }
    if (!gradNorm.type)
      return fail(fnOf(0, 'N'), Twine("no accumulator '") +
                                    PipeDialect::kGradNormBuffer + "'");
  }
  struct Reduction {
    const SharedWeight *weight;
    int64_t microbatch;
  };
  std::vector<Reduction> reductions;
  struct Item {
    int64_t reduction = -1; // or an action (rank, index)
    int64_t rank = 0, index = 0;
    int64_t normStage = -1; // or the N of this stage
  };
  std::map<std::pair<int64_t, int64_t>, double> startOf;
  for (auto [t, r, i] : order)
    startOf[{r, i}] = t;
  std::vector<Item> merged;
  // Fills `reductions` and `merged`; false (with nothing emitted) when the
  // order deadlocks, failure on an inconsistent schedule.
  auto orderWithReductions = [&](bool deferUpdates) -> FailureOr<bool> {
    reductions.clear();
    merged.clear();
    std::vector<std::vector<Item>> items(k);
    // (weight, j) -> reduction index.
    std::map<std::pair<std::string, int64_t>, int64_t> reductionOf;
    for (int64_t r = 0; r < k; ++r) {
      std::map<int64_t, int64_t> updatesOf; // stage -> U seen so far
      std::vector<Item> updates;
      std::vector<std::pair<std::pair<std::string, int64_t>, int64_t>> deferred;
      for (size_t i = 0; i < schedule.ranks[r].size(); ++i) {
        const sched::Action &a = schedule.ranks[r][i];
        if (a.op == sched::Op::U) {
          int64_t j = updatesOf[a.stage]++;
          for (auto &[name, w] : sharedByName) {
            auto owner = w.ownerOf.find(r);
            if (owner == w.ownerOf.end() || owner->second != a.stage)
              continue;
            auto [it, inserted] =
                reductionOf.insert({{name, j}, (int64_t)reductions.size()});
            if (inserted)
              reductions.push_back({&w, a.microbatch});
            else if (reductions[it->second].microbatch != a.microbatch) {
              fail(fnOf(a.stage, 'U'), "the updates of '" + name +
                                           "' on different ranks follow "
                                           "different micro-batches");
              return failure();
            }
            if (deferUpdates)
              deferred.push_back({{name, j}, it->second});
            else
              items[r].push_back({it->second, r, 0});
          }
          if (deferUpdates) {
            updates.push_back({-1, r, (int64_t)i});
            continue;
          }
        }
        items[r].push_back({-1, r, (int64_t)i});
      }
      llvm::sort(deferred);
      for (auto &entry : deferred)
        items[r].push_back({entry.second, r, 0});
      if (clips && deferUpdates) {
        for (int64_t v = 0; v < numStages; ++v)
          if (config.rankOf(v) == r)
            items[r].push_back({-1, r, 0, v});
        auto [it, inserted] = reductionOf.insert(
            {{gradNorm.name, 0}, (int64_t)reductions.size()});
        if (inserted)
          reductions.push_back({&gradNorm, numMicrobatches - 1});
        if (k > 1)
          items[r].push_back({it->second, r, 0});
      }
      llvm::append_range(items[r], updates);
    }
    std::set<std::tuple<int, int64_t, int64_t>> placed; // (op, stage, mb)
    auto ready = [&](const sched::Action &a) {
      if (a.op == sched::Op::F) {
        for (auto [edge, consumer] : consumerOf)
          if (consumer == a.stage &&
              !placed.count({(int)sched::Op::F, producerOf[edge],
                             a.microbatch}))
            return false;
      } else if (a.op == sched::Op::B) {
        for (auto [edge, producer] : producerOf)
          if (producer == a.stage &&
              !placed.count({(int)sched::Op::B, consumerOf[edge],
                             a.microbatch}))
            return false;
      }
      return true;
    };
    std::vector<size_t> head(k, 0);
    auto done = [&] {
      for (int64_t r = 0; r < k; ++r)
        if (head[r] < items[r].size())
          return false;
      return true;
    };
    while (!done()) {
      // An N reads only its own rank's gradients: it runs when reached.
      bool placedNorm = false;
      for (int64_t r = 0; r < k; ++r)
        while (head[r] < items[r].size() && items[r][head[r]].normStage >= 0) {
          merged.push_back(items[r][head[r]++]);
          placedNorm = true;
        }
      if (placedNorm)
        continue;
      int64_t pick = -1;
      double best = 0;
      for (int64_t r = 0; r < k && pick < 0; ++r) {
        if (head[r] >= items[r].size() || items[r][head[r]].reduction < 0)
          continue;
        int64_t red = items[r][head[r]].reduction;
        bool all = true;
        for (auto [rank, owner] : reductions[red].weight->ownerOf)
          all &= head[rank] < items[rank].size() &&
                 items[rank][head[rank]].reduction == red;
        if (all)
          pick = r;
      }
      if (pick >= 0) {
        int64_t red = items[pick][head[pick]].reduction;
        merged.push_back(items[pick][head[pick]]);
        for (auto [rank, owner] : reductions[red].weight->ownerOf)
          ++head[rank];
        continue;
      }
      for (int64_t r = 0; r < k; ++r) {
        if (head[r] >= items[r].size() || items[r][head[r]].reduction >= 0)
          continue;
        const Item &item = items[r][head[r]];
        const sched::Action &a = schedule.ranks[r][item.index];
        double t = startOf[{r, item.index}];
        if (ready(a) && (pick < 0 || t < best)) {
          pick = r;
          best = t;
        }
      }
      if (pick < 0)
        return false;
      const Item &item = items[pick][head[pick]++];
      const sched::Action &a = schedule.ranks[pick][item.index];
      placed.insert({(int)a.op, a.stage, a.microbatch});
      merged.push_back(item);
    }
    return true;
  };
  FailureOr<bool> ordered = orderWithReductions(/*deferUpdates=*/clips);
  if (succeeded(ordered) && !*ordered && config.isSynchronous() && !clips)
    ordered = orderWithReductions(/*deferUpdates=*/true);
  if (failed(ordered))
    return; // reported by `fail`
  if (!*ordered) {
    module.emitError()
        << "pipe-unroll-schedule: the gradient all-reduces of the "
           "shared weights cannot be placed in this schedule without a "
           "deadlock";
    return signalPassFailure();
  }

  // Program signature: every input per micro-batch (input-major), the loss
  // per micro-batch.
  SmallVector<Type> argTypes, resultTypes;
  for (auto &[name, type] : inputs)
    argTypes.append(numMicrobatches, type);
  if (lossType)
    resultTypes.assign(numMicrobatches, lossType);
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = module.getLoc();
  auto scheduleAttr = ScheduleAttr::get(&getContext(), *toScheduleKindAttr(config.kind),
                                        k, numMicrobatches, numChunks);
  auto program = ProgramOp::create(
      b, loc, "train", b.getFunctionType(argTypes, resultTypes), scheduleAttr);
  SmallVector<Attribute> argAttrs;
  for (auto &[name, type] : inputs)
    for (int64_t m = 0; m < numMicrobatches; ++m)
      argAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("pipe.stage", stageAttrOf(inputStage[name])),
           b.getNamedAttr("pipe.input", b.getStringAttr(name)),
           b.getNamedAttr("pipe.microbatch", b.getI64IntegerAttr(m))}));
  SmallVector<Attribute> resAttrs(
      resultTypes.size(),
      b.getDictionaryAttr(
          b.getNamedAttr("pipe.stage", stageAttrOf(numStages - 1))));
  if (!argAttrs.empty())
    program.setArgAttrsAttr(b.getArrayAttr(argAttrs));
  if (!resAttrs.empty())
    program.setResAttrsAttr(b.getArrayAttr(resAttrs));
  Block *body = b.createBlock(&program.getBody(), {}, argTypes,
                              SmallVector<Location>(argTypes.size(), loc));
  b.setInsertionPointToEnd(body);
  auto inputArg = [&](StringRef name, int64_t m) -> Value {
    for (auto [n, entry] : llvm::enumerate(inputs))
      if (entry.first == name)
        return body->getArgument(n * numMicrobatches + m);
    return Value();
  };

  using Key = std::pair<int64_t, int64_t>; // (edge, micro-batch)
  std::map<Key, Value> activation, gradient; // arrived at the consumer
  // (input name, micro-batch, consuming stage) -> the input's transfer.
  std::map<std::tuple<std::string, int64_t, int64_t>, Value> inputTransfers;
  std::map<Key, int64_t> slotBase;            // (stage, micro-batch)
  SmallVector<Value> losses(resultTypes.size());

  auto slotOf = [&](int64_t v, int64_t m, bool carry, int64_t index) {
    int64_t r = config.rankOf(v);
    return slotBase[{v, m}] * perSlot[r] +
           (carry ? residualsPerRank[r] : 0) + index;
  };

  for (const Item &item : merged) {
    if (item.normStage >= 0) {
      func::FuncOp fn = fnOf(item.normStage, 'N');
      CallStageOp::create(b, loc, cast<FunctionOpInterface>(fn.getOperation()),
                          ActionKind::GradNorm, ValueRange(),
                          stageAttrOf(item.normStage), numMicrobatches - 1);
      continue;
    }
    if (item.reduction >= 0) {
      const Reduction &red = reductions[item.reduction];
      SmallVector<Attribute> stages;
      for (int64_t v : red.weight->stages)
        stages.push_back(stageAttrOf(v));
      AllReduceGradOp::create(b, loc, b.getStringAttr(red.weight->name),
                              b.getArrayAttr(stages),
                              b.getI64IntegerAttr(red.microbatch),
                              TypeAttr::get(red.weight->type));
      continue;
    }
    int64_t r = item.rank, i = item.index;
    const sched::Action &a = schedule.ranks[r][i];
    int64_t v = a.stage, m = a.microbatch;
    char letter = sched::opLetter(a.op);
    func::FuncOp fn = fnOf(v, letter);
    if (a.op == sched::Op::F)
      slotBase[{v, m}] = slots[r][i];
    SmallVector<Value> args;
    for (unsigned j = 0, e = fn.getNumArguments(); j < e; ++j) {
      if (isBoundArgument(fn, j))
        continue;
      ValueRole role = *roleOf(fn, false, j);
      Type type = fn.getArgumentTypes()[j];
      Value value;
      switch (role.kind) {
      case ValueRole::Input: {
        value = inputArg(role.name, m);
        // NOTE: a program input lives on the first stage that reads it
        // (inputStage); a later stage reading the same input (the initial
        // states of a bidirectional recurrent layer whose directions land
        // on different stages, a mask read in every layer) receives it
        // through a transfer, once per micro-batch, so that values cross
        // ranks only through pipe.transfer. Inputs take no gradient.
        int64_t home = inputStage[role.name];
        if (value && home != v) {
          Value &sent = inputTransfers[{role.name, m, v}];
          if (!sent)
            sent = TransferOp::create(b, loc, value, stageAttrOf(home),
                                      stageAttrOf(v));
          value = sent;
        }
        break;
      }
      case ValueRole::Recv:
        value = activation[{role.index, m}];
        break;
      case ValueRole::Grad:
        value = gradient[{role.index, m}];
        break;
      case ValueRole::Residual:
      case ValueRole::Carry:
        value = RestoreOp::create(
            b, loc, type, StashKind::Activation,
            slotOf(v, m, role.kind == ValueRole::Carry, role.index),
            stageAttrOf(v), m);
        break;
      default:
        break;
      }
      if (!value || value.getType() != type)
        return fail(fn, llvm::Twine(letter) + " argument " + Twine(j) +
                            " gets no value of its type from the schedule");
      args.push_back(value);
    }
    auto call = CallStageOp::create(
        b, loc, cast<FunctionOpInterface>(fn.getOperation()),
        toActionKind(a.op), args, stageAttrOf(v), m);
    if (a.join != sched::Join::None)
      call->setAttr(kJoinAttrName, b.getStringAttr(joinName(a.join)));
    // Asynchronous schedules: F records the stage's weight version in the
    // (stage, micro-batch)'s slot, its B and W run with that version.
    if (!config.isSynchronous() && a.op != sched::Op::U)
      call->setAttr("pipe.weight_version",
                    b.getI64IntegerAttr(slotBase[{v, m}]));
    if (a.op == sched::Op::B) {
      unsigned argIndex = 0;
      for (unsigned j = 0, e = fn.getNumArguments(); j < e; ++j) {
        if (isBoundArgument(fn, j))
          continue;
        ValueRole role = *roleOf(fn, false, j);
        if (role.kind == ValueRole::Residual &&
            weightResiduals[v].count(role.index))
          StashOp::create(b, loc, args[argIndex], StashKind::Activation,
                          slotOf(v, m, false, role.index), stageAttrOf(v), m);
        ++argIndex;
      }
    }
    unsigned next = 0;
    for (unsigned j = 0, e = fn.getNumResults(); j < e; ++j) {
      if (isBoundResult(fn, j))
        continue;
      Value result = call.getResult(next++);
      ValueRole role = *roleOf(fn, true, j);
      switch (role.kind) {
      case ValueRole::Send:
        activation[{role.index, m}] = TransferOp::create(
            b, loc, result, stageAttrOf(v),
            stageAttrOf(consumerOf[role.index]));
        break;
      case ValueRole::Grad:
        gradient[{role.index, m}] = TransferOp::create(
            b, loc, result, stageAttrOf(v),
            stageAttrOf(producerOf[role.index]));
        break;
      case ValueRole::Residual:
      case ValueRole::Carry:
        StashOp::create(b, loc, result, StashKind::Activation,
                        slotOf(v, m, role.kind == ValueRole::Carry,
                               role.index),
                        stageAttrOf(v), m);
        break;
      case ValueRole::Loss:
        losses[m] = result;
        break;
      default:
        break;
      }
    }
  }
  ReturnOp::create(b, loc, losses);
}
