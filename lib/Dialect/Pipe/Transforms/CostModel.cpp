//===- CostModel.cpp - per-op costs for the partitioner -------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/Pipe/Transforms/CostModel.h"

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace pipedream;
using namespace pipedream::pipe;

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

std::optional<DeviceModel> DeviceModel::lookup(StringRef name) {
  // Each row: name; matrix FLOP/s on 16-, 32- and 64-bit floats; vector
  // FLOP/s; memory and link bandwidth (bytes/s); link latency and op
  // overhead (s).
  static const DeviceModel kDevices[] = {
      // One core of an AVX-512 x86 server (the build machine: AMD EPYC, two
      // 512-bit FMA pipes at ~2.6 GHz = 166 GFLOP/s f32 nominal). Attainable
      // figures for the generated code, not peaks: the profile calibrates.
      // Ranks are processes on one host (MPI over shared memory).
      {"cpu", 100e9, 100e9, 50e9, 20e9, 20e9, 5e9, 5e-6, 0.5e-6},
      // NVIDIA H200 SXM, dense: BF16 989 TFLOP/s, TF32 494 (f32 contractions
      // on tensor cores), FP64 67; FP32 CUDA cores 67 TFLOP/s; HBM3e
      // 4.8 TB/s; NVLink 900 GB/s both ways (450 GB/s per direction). The
      // latency is NCCL send/recv's, the op overhead a kernel launch.
      {"h200", 989e12, 494e12, 67e12, 67e12, 4.8e12, 450e9, 10e-6, 3e-6},
  };
  for (const DeviceModel &d : kDevices)
    if (d.name == name)
      return d;
  return std::nullopt;
}

/// The numeric fields of a device by their key in `pipe.device`: toAttr and
/// fromAttr walk this one list.
static constexpr std::pair<const char *, double DeviceModel::*>
    kDeviceFields[] = {
        {"matrix_flops_16", &DeviceModel::matrixFlops16},
        {"matrix_flops_32", &DeviceModel::matrixFlops32},
        {"matrix_flops_64", &DeviceModel::matrixFlops64},
        {"vector_flops", &DeviceModel::vectorFlops},
        {"memory_bandwidth", &DeviceModel::memoryBandwidth},
        {"link_bandwidth", &DeviceModel::linkBandwidth},
        {"link_latency", &DeviceModel::linkLatency},
        {"op_overhead", &DeviceModel::opOverhead},
};

DictionaryAttr DeviceModel::toAttr(MLIRContext *context) const {
  Builder b(context);
  SmallVector<NamedAttribute> fields{
      b.getNamedAttr("name", b.getStringAttr(name))};
  for (auto [key, field] : kDeviceFields)
    fields.push_back(b.getNamedAttr(key, b.getF64FloatAttr(this->*field)));
  return b.getDictionaryAttr(fields);
}

static std::optional<double> getF64(DictionaryAttr dict, StringRef key) {
  if (auto f = dict.getAs<FloatAttr>(key))
    return f.getValueAsDouble();
  return std::nullopt;
}

std::optional<DeviceModel> DeviceModel::fromAttr(Attribute attr) {
  auto dict = dyn_cast_or_null<DictionaryAttr>(attr);
  if (!dict)
    return std::nullopt;
  DeviceModel d;
  if (auto name = dict.getAs<StringAttr>("name"))
    d.name = name.str();
  for (auto [key, field] : kDeviceFields)
    d.*field = getF64(dict, key).value_or(0);
  return d;
}

//===----------------------------------------------------------------------===//
// The cost attribute
//===----------------------------------------------------------------------===//

DictionaryAttr OpCost::toAttr(MLIRContext *context) const {
  Builder b(context);
  return b.getDictionaryAttr({
      b.getNamedAttr("forward", b.getF64FloatAttr(forward)),
      b.getNamedAttr("backward_input", b.getF64FloatAttr(backwardInput)),
      b.getNamedAttr("backward_weight", b.getF64FloatAttr(backwardWeight)),
      b.getNamedAttr("parameter_bytes", b.getI64IntegerAttr(parameterBytes)),
      b.getNamedAttr("frozen_bytes", b.getI64IntegerAttr(frozenBytes)),
      b.getNamedAttr("activation_bytes", b.getI64IntegerAttr(activationBytes)),
      b.getNamedAttr("output_bytes", b.getI64IntegerAttr(outputBytes)),
      b.getNamedAttr("source", b.getStringAttr(source)),
  });
}

std::optional<OpCost> OpCost::fromAttr(Attribute attr) {
  auto dict = dyn_cast_or_null<DictionaryAttr>(attr);
  if (!dict)
    return std::nullopt;
  OpCost c;
  auto f = [&](StringRef key, double &out) {
    if (auto v = getF64(dict, key))
      out = *v;
  };
  auto i = [&](StringRef key, int64_t &out) {
    if (auto v = dict.getAs<IntegerAttr>(key))
      out = v.getInt();
  };
  f("forward", c.forward);
  f("backward_input", c.backwardInput);
  f("backward_weight", c.backwardWeight);
  i("parameter_bytes", c.parameterBytes);
  i("frozen_bytes", c.frozenBytes);
  i("activation_bytes", c.activationBytes);
  i("output_bytes", c.outputBytes);
  if (auto s = dict.getAs<StringAttr>("source"))
    c.source = s.str();
  return c;
}

//===----------------------------------------------------------------------===//
// Op names and signatures
//===----------------------------------------------------------------------===//

std::string pipe::getOpName(Operation *op) {
  std::string name;
  op->getLoc()->walk([&](Location loc) {
    if (auto named = dyn_cast<NameLoc>(loc)) {
      name = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

static void printType(llvm::raw_ostream &os, Type type) {
  if (auto ranked = dyn_cast<RankedTensorType>(type)) {
    for (int64_t d : ranked.getShape())
      os << d << "x";
    os << ranked.getElementType();
    return;
  }
  os << type;
}

std::string pipe::getOpSignature(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      op->getOperandTypes(), os, [&](Type t) { printType(os, t); }, ",");
  os << "->";
  llvm::interleave(
      op->getResultTypes(), os, [&](Type t) { printType(os, t); }, ",");
  return text;
}

bool pipe::isPlacedOp(Operation *op) {
  return !op->hasTrait<OpTrait::IsTerminator>() &&
         !op->hasTrait<OpTrait::ConstantLike>();
}

//===----------------------------------------------------------------------===//
// Profiles
//===----------------------------------------------------------------------===//

static std::string key(StringRef a, StringRef b, StringRef c = "") {
  return (a + "\x1f" + b + "\x1f" + c).str();
}

void Profile::index() {
  byNameKey_.clear();
  byOpKey_.clear();
  for (size_t i = 0; i < entries.size(); ++i) {
    const ProfileEntry &e = entries[i];
    if (!e.name.empty())
      byNameKey_.try_emplace(key(e.name, e.op, e.signature), i);
    byOpKey_.try_emplace(key(e.op, e.signature), i);
  }
}

const ProfileEntry *Profile::lookup(Operation *op) const {
  std::string opName = op->getName().getStringRef().str();
  std::string signature = getOpSignature(op);
  std::string name = getOpName(op);
  if (!name.empty()) {
    auto it = byNameKey_.find(key(name, opName, signature));
    if (it != byNameKey_.end())
      return &entries[it->second];
  }
  auto it = byOpKey_.find(key(opName, signature));
  return it == byOpKey_.end() ? nullptr : &entries[it->second];
}

FailureOr<Profile> Profile::read(StringRef path,
                                 function_ref<InFlightDiagnostic()> emitError) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return emitError() << path << ": " << buffer.getError().message();
  return parse((*buffer)->getBuffer(), path, emitError);
}

FailureOr<Profile>
Profile::parse(StringRef text, StringRef path,
               function_ref<InFlightDiagnostic()> emitError) {
  auto json = llvm::json::parse(text);
  if (!json)
    return emitError() << path << ": invalid JSON: "
                       << llvm::toString(json.takeError());
  auto *root = json->getAsObject();
  if (!root || !root->getArray("ops"))
    return emitError() << path
                       << ": not a pipedream profile (expected an object "
                          "with an \"ops\" array)";
  Profile profile;
  if (auto device = root->getString("device"))
    profile.device = device->str();
  if (const llvm::json::Value *link = root->get("link")) {
    auto *obj = link->getAsObject();
    std::optional<double> latency =
        obj ? obj->getNumber("latency") : std::nullopt;
    std::optional<double> bandwidth =
        obj ? obj->getNumber("bandwidth") : std::nullopt;
    if (!latency || !bandwidth)
      return emitError() << path
                         << ": \"link\" needs \"latency\" (seconds per "
                            "message) and \"bandwidth\" (bytes per second)";
    if (!(*latency >= 0 && std::isfinite(*latency)))
      return emitError() << path
                         << ": link \"latency\" must be a finite, "
                            "non-negative time in seconds";
    if (!(*bandwidth > 0 && std::isfinite(*bandwidth)))
      return emitError() << path
                         << ": link \"bandwidth\" must be a finite, positive "
                            "number of bytes per second";
    profile.linkLatency = *latency;
    profile.linkBandwidth = *bandwidth;
  }
  size_t index = 0;
  for (const llvm::json::Value &value : *root->getArray("ops")) {
    auto *obj = value.getAsObject();
    auto fail = [&](const Twine &why) -> FailureOr<Profile> {
      return emitError() << path << ": ops[" << index << "]: " << why;
    };
    if (!obj)
      return fail("expected an object");
    ProfileEntry e;
    if (auto s = obj->getString("name"))
      e.name = s->str();
    auto op = obj->getString("op");
    auto signature = obj->getString("signature");
    auto forward = obj->getNumber("forward");
    if (!op || !signature || !forward)
      return fail("needs \"op\", \"signature\" and \"forward\" (seconds)");
    // Times are finite and non-negative (JSON's 1e999 parses as infinity).
    for (const char *field : {"forward", "backward_input", "backward_weight"})
      if (auto v = obj->getNumber(field); v && !(*v >= 0 && std::isfinite(*v)))
        return fail(Twine("\"") + field +
                    "\" must be a finite, non-negative time in seconds");
    e.op = op->str();
    e.signature = signature->str();
    e.forward = *forward;
    if (auto v = obj->getNumber("backward_input"))
      e.backwardInput = *v;
    if (auto v = obj->getNumber("backward_weight"))
      e.backwardWeight = *v;
    profile.entries.push_back(std::move(e));
    ++index;
  }
  profile.index();
  return profile;
}

std::string Profile::toJSON() const {
  llvm::json::Array ops;
  for (const ProfileEntry &e : entries) {
    llvm::json::Object obj;
    if (!e.name.empty())
      obj["name"] = e.name;
    obj["op"] = e.op;
    obj["signature"] = e.signature;
    obj["forward"] = e.forward;
    if (e.backwardInput)
      obj["backward_input"] = *e.backwardInput;
    if (e.backwardWeight)
      obj["backward_weight"] = *e.backwardWeight;
    ops.push_back(std::move(obj));
  }
  llvm::json::Object root{{"format", "pipedream-profile"},
                          {"version", 1},
                          {"device", device},
                          {"ops", std::move(ops)}};
  if (linkLatency && linkBandwidth)
    root["link"] = llvm::json::Object{{"latency", *linkLatency},
                                      {"bandwidth", *linkBandwidth}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return text;
}

//===----------------------------------------------------------------------===//
// The analytical model
//===----------------------------------------------------------------------===//

static int64_t byteSize(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  Type element = shaped.getElementType();
  if (!element.isIntOrFloat())
    return 0;
  return shaped.getNumElements() * ((element.getIntOrFloatBitWidth() + 7) / 8);
}

static bool isFloat(Value value) {
  return isa<FloatType>(getElementTypeOrSelf(value.getType()));
}

namespace {
/// How an op's backward uses its forward values (see docs/Pipe.md).
enum class Saves {
  /// Linear in every operand and shape-only: the backward needs no forward
  /// value (add, transpose, reshape, sums...).
  Nothing,
  /// Bilinear (matmul, gemm, conv, mul): operand i's gradient needs the
  /// other operands.
  Others,
  /// Nonlinear: the backward needs the float operands.
  Inputs,
};
} // namespace

static Saves classify(StringRef name) {
  static const llvm::StringSet<> nothing = {
      "nn.add",       "nn.sub",        "nn.neg",
      "nn.reshape",   "nn.flatten",    "nn.transpose",
      "nn.squeeze",   "nn.unsqueeze",  "nn.expand",
      "nn.concat",    "nn.split",      "nn.slice",
      "nn.cast",      "nn.reduce_sum", "nn.reduce_mean",
      "nn.gather",    "nn.where",      "nn.average_pool",
      "nn.global_average_pool"};
  static const llvm::StringSet<> bilinear = {"nn.matmul", "nn.gemm",
                                             "nn.conv", "nn.mul"};
  if (nothing.contains(name))
    return Saves::Nothing;
  if (bilinear.contains(name))
    return Saves::Others;
  return Saves::Inputs;
}

/// Ops that only reinterpret a buffer: no work, no launch.
static bool isView(StringRef name) {
  return name == "nn.reshape" || name == "nn.flatten" ||
         name == "nn.squeeze" || name == "nn.unsqueeze";
}

static bool isContraction(StringRef name) {
  return name == "nn.matmul" || name == "nn.gemm" || name == "nn.conv";
}

/// Forward time of `op` on `device`: max(flops / peak, bytes / bandwidth)
/// plus the per-op overhead.
static double analyticalForward(Operation *op, const DeviceModel &device) {
  StringRef name = op->getName().getStringRef();
  if (isView(name))
    return 0;
  int64_t flops = 0, bytes = 0;
  if (auto cost = dyn_cast<nn::CostOpInterface>(op)) {
    flops = cost.getForwardFlops();
    bytes = cost.getForwardBytes();
  } else {
    for (Type t : op->getOperandTypes())
      bytes += byteSize(t);
    for (Type t : op->getResultTypes())
      bytes += byteSize(t);
  }
  if (name == "nn.gather" && op->getNumOperands() == 2 &&
      op->getNumResults() == 1) {
    // A gather reads the rows it returns, not the whole table.
    bytes = 2 * byteSize(op->getResult(0).getType()) +
            byteSize(op->getOperand(1).getType());
  }
  double peak = device.vectorFlops;
  if (isContraction(name)) {
    unsigned width = 32;
    if (op->getNumResults() > 0)
      if (auto f = dyn_cast<FloatType>(
              getElementTypeOrSelf(op->getResult(0).getType())))
        width = f.getWidth();
    peak = width <= 16   ? device.matrixFlops16
           : width <= 32 ? device.matrixFlops32
                         : device.matrixFlops64;
  }
  double compute = peak > 0 ? flops / peak : 0;
  double memory =
      device.memoryBandwidth > 0 ? bytes / device.memoryBandwidth : 0;
  return device.opOverhead + std::max(compute, memory);
}

llvm::DenseMap<Operation *, OpCost>
pipe::computeCosts(func::FuncOp func, const DeviceModel &device,
                   const Profile *profile) {
  llvm::DenseMap<Operation *, OpCost> costs;
  if (func.isExternal())
    return costs;
  // Weights: trainable unless nn.frozen.
  llvm::DenseSet<Value> trainable, frozen;
  for (BlockArgument arg : func.getArguments()) {
    if (!func.getArgAttr(arg.getArgNumber(), nn::NNDialect::kParamAttrName))
      continue;
    if (func.getArgAttr(arg.getArgNumber(), nn::NNDialect::kFrozenAttrName))
      frozen.insert(arg);
    else
      trainable.insert(arg);
  }
  // Values a gradient reaches: those that depend on a trainable weight.
  llvm::DenseSet<Value> needsGrad(trainable.begin(), trainable.end());
  llvm::DenseSet<Value> countedWeights, kept;
  // Weight-derived values (a Linear's transpose(W), a cast weight):
  // nn-autodiff recomputes them in the backward instead of saving them
  // (docs/Training.md), so they are weights to this model: never stashed,
  // and an op reading one derived from a trainable weight computes that
  // weight's gradient. Results of a memory-bound op (flops <= bytes) whose
  // operands are all weights, weight-derived values or constants.
  llvm::DenseSet<Value> derivedTrainable, derivedFrozen;
  auto isWeightLike = [&](Value v) {
    return trainable.contains(v) || frozen.contains(v) ||
           derivedTrainable.contains(v) || derivedFrozen.contains(v) ||
           matchPattern(v, m_Constant());
  };

  for (Operation &op : func.getBody().front()) {
    if (!isPlacedOp(&op))
      continue;
    OpCost cost;
    StringRef name = op.getName().getStringRef();
    cost.forward = analyticalForward(&op, device);
    for (Type t : op.getResultTypes())
      cost.outputBytes += byteSize(t);

    bool readsTrainable = false, gradientIn = false;
    SmallVector<bool> operandGrad;
    for (Value operand : op.getOperands()) {
      bool grad = isFloat(operand) && needsGrad.contains(operand);
      operandGrad.push_back(grad);
      if (trainable.contains(operand)) {
        readsTrainable = true;
        if (countedWeights.insert(operand).second)
          cost.parameterBytes += byteSize(operand.getType());
      } else if (derivedTrainable.contains(operand)) {
        readsTrainable = true;
      } else if (derivedFrozen.contains(operand)) {
      } else if (frozen.contains(operand)) {
        if (countedWeights.insert(operand).second)
          cost.frozenBytes += byteSize(operand.getType());
      } else if (grad) {
        gradientIn = true;
      }
    }
    if (auto interface = dyn_cast<nn::CostOpInterface>(&op);
        interface && op.getNumOperands() > 0 && op.getNumRegions() == 0 &&
        interface.getForwardFlops() <= interface.getForwardBytes() &&
        llvm::all_of(op.getOperands(), isWeightLike)) {
      bool ofTrainable = llvm::any_of(op.getOperands(), [&](Value v) {
        return trainable.contains(v) || derivedTrainable.contains(v);
      });
      for (Value result : op.getResults())
        (ofTrainable ? derivedTrainable : derivedFrozen).insert(result);
    }
    bool anyGrad = readsTrainable || gradientIn;
    if (anyGrad) {
      for (Value result : op.getResults())
        if (isFloat(result))
          needsGrad.insert(result);
    }
    // Backward: the input gradient costs about one forward (the transposed
    // contraction, the elementwise derivative), the weight gradient another
    // forward for ops that read a trainable weight. Views cost nothing.
    if (!isView(name)) {
      if (gradientIn)
        cost.backwardInput = cost.forward;
      if (readsTrainable)
        cost.backwardWeight = cost.forward;
    }

    // Activations the backward keeps (weights are not activations).
    if (anyGrad) {
      Saves saves = classify(name);
      for (auto [i, operand] : llvm::enumerate(op.getOperands())) {
        if (isWeightLike(operand))
          continue;
        bool keep = false;
        if (!isFloat(operand)) {
          keep = true; // indices, masks: route the gradient
        } else if (saves == Saves::Inputs) {
          keep = true;
        } else if (saves == Saves::Others) {
          for (auto [j, other] : llvm::enumerate(op.getOperands()))
            if (j != i && (operandGrad[j] || trainable.contains(other)))
              keep = true;
        }
        if (keep && kept.insert(operand).second)
          cost.activationBytes += byteSize(operand.getType());
      }
    }

    if (profile) {
      if (const ProfileEntry *e = profile->lookup(&op)) {
        // Measured backward times apply where a backward runs at all (a
        // gradient reaches an operand, the op reads a trainable weight);
        // without them the analytical rule applies to the measured forward.
        double f = e->forward;
        bool view = isView(name);
        cost.backwardInput =
            gradientIn ? e->backwardInput.value_or(view ? 0 : f) : 0;
        cost.backwardWeight =
            readsTrainable ? e->backwardWeight.value_or(view ? 0 : f) : 0;
        cost.forward = f;
        cost.source = "profile";
      }
    }
    costs[&op] = cost;
  }
  return costs;
}

//===----------------------------------------------------------------------===//
// The partition problem of a function
//===----------------------------------------------------------------------===//

/// Sorts `indices` and drops repeats: the solver takes each reader once,
/// in order.
static void sortUnique(std::vector<int64_t> &indices) {
  llvm::sort(indices);
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
}

partition::Graph
pipe::buildPartitionGraph(func::FuncOp func,
                          SmallVectorImpl<Operation *> &nodes,
                          int64_t &missingCosts) {
  partition::Graph graph;
  missingCosts = 0;
  nodes.clear();
  if (func.isExternal())
    return graph;
  llvm::DenseMap<Operation *, int64_t> index;
  for (Operation &op : func.getBody().front())
    if (isPlacedOp(&op)) {
      index[&op] = nodes.size();
      nodes.push_back(&op);
    }
  int64_t n = nodes.size();
  for (Operation *op : nodes) {
    partition::Node node;
    if (auto cost = OpCost::fromAttr(op->getAttr(kCostAttrName))) {
      node.forward = cost->forward;
      node.backwardInput = cost->backwardInput;
      node.backwardWeight = cost->backwardWeight;
      node.parameterBytes = cost->parameterBytes;
      node.frozenBytes = cost->frozenBytes;
      node.activationBytes = cost->activationBytes;
    } else {
      ++missingCosts;
    }
    graph.nodes.push_back(node);
  }
  for (Operation *op : nodes) {
    int64_t producer = index[op];
    for (Value result : op->getResults()) {
      partition::Value value;
      value.producer = producer;
      value.bytes = byteSize(result.getType());
      value.hasGradient = isFloat(result);
      for (Operation *user : result.getUsers()) {
        // Users in nested regions count as their ancestor in the body.
        Operation *top = func.getBody().front().findAncestorOpInBlock(*user);
        if (!top)
          continue;
        int64_t at = index.lookup(top);
        if (top->hasTrait<OpTrait::IsTerminator>())
          at = n - 1;
        else if (!index.count(top))
          continue;
        if (at > producer)
          value.users.push_back(at);
      }
      sortUnique(value.users);
      if (!value.users.empty())
        graph.values.push_back(std::move(value));
    }
  }
  // Data inputs (what a recomputing stage stashes of them).
  for (BlockArgument arg : func.getArguments()) {
    if (func.getArgAttr(arg.getArgNumber(), nn::NNDialect::kParamAttrName))
      continue;
    partition::Value input;
    input.bytes = byteSize(arg.getType());
    input.hasGradient = false;
    for (Operation *user : arg.getUsers()) {
      Operation *top = func.getBody().front().findAncestorOpInBlock(*user);
      if (top && index.count(top))
        input.users.push_back(index.lookup(top));
    }
    sortUnique(input.users);
    if (!input.users.empty())
      graph.inputs.push_back(std::move(input));
  }
  // Trainable weights read by several ops (tied weights).
  for (BlockArgument arg : func.getArguments()) {
    if (!func.getArgAttr(arg.getArgNumber(), nn::NNDialect::kParamAttrName) ||
        func.getArgAttr(arg.getArgNumber(), nn::NNDialect::kFrozenAttrName))
      continue;
    partition::SharedWeight weight;
    weight.bytes = byteSize(arg.getType());
    for (Operation *user : arg.getUsers()) {
      Operation *top = func.getBody().front().findAncestorOpInBlock(*user);
      if (top && index.count(top))
        weight.readers.push_back(index.lookup(top));
    }
    sortUnique(weight.readers);
    if (weight.readers.size() >= 2)
      graph.sharedWeights.push_back(std::move(weight));
  }
  return graph;
}

std::optional<int64_t> pipe::parseByteSize(StringRef text) {
  text = text.trim();
  size_t digits = 0;
  while (digits < text.size() &&
         (isdigit(text[digits]) || text[digits] == '.'))
    ++digits;
  if (digits == 0)
    return std::nullopt;
  double number;
  if (text.take_front(digits).getAsDouble(number))
    return std::nullopt;
  StringRef suffix = text.drop_front(digits).trim();
  double scale = llvm::StringSwitch<double>(suffix.lower())
                     .Cases({"", "b"}, 1)
                     .Cases({"k", "kb"}, 1e3)
                     .Cases({"m", "mb"}, 1e6)
                     .Cases({"g", "gb"}, 1e9)
                     .Cases({"t", "tb"}, 1e12)
                     .Case("kib", 1024.0)
                     .Case("mib", 1024.0 * 1024)
                     .Case("gib", 1024.0 * 1024 * 1024)
                     .Case("tib", 1024.0 * 1024 * 1024 * 1024)
                     .Default(-1);
  if (scale < 0)
    return std::nullopt;
  return static_cast<int64_t>(number * scale);
}
