//===- pipedream-profile.cpp - per-op profiler for the cost model ---------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
//   pipedream-profile MODEL.onnx|MODEL.mlir -o PROFILE.json
//       [--input-shape NAME=DxD ...] [--batch-size N [--microbatches M]]
//       [--function main] [--warmup N] [--repeats N] [--seed S]
//       [--device NAME] [--target-cpu native|NAME] [-O0..-O3]
//       [--gemm auto|vectorize|blas|loops]
//
// PipeDream's profiler, per op (docs/Pipe.md, "Profiles"). For every placed
// op of the model function (constants and the terminator excepted) it
// builds a one-op function whose arguments are the op's operands (constant
// operands are cloned in), differentiates it with nn-autodiff's library
// (split backward: forward, backward-input, backward-weight), compiles all
// of them into ONE shared library with the CPU code generator, dlopen()s it
// and times each function on seeded random inputs on one thread: warm-up
// calls, then the median of `--repeats` samples. The result is the JSON
// profile `pipe-annotate-costs{profile=FILE}` and
// `pipedream-compile --cost-model FILE` read.
//
// The one-op function sees the op as the model does:
// - an operand that is a trainable weight of the model (`nn.param`) is a
//   weight argument, so it gets a weight gradient (`nn.frozen` is kept);
// - a float operand no gradient reaches in the model (it does not depend
//   on a trainable weight) is `nn.no_grad`, so the backward-input time
//   covers exactly the gradients training computes;
// - integer operands get valid values: gather indices lie in the gathered
//   axis, one-hot indices below the depth.
// The forward time is the op alone (no residual copies); backward times are
// 0 where the model computes no such gradient (integer data, inputs that
// need none, ops without weights). Ops with identical type, attributes,
// operand kinds and constants are measured once.
//
// Every error is one line on stderr with a non-zero exit status.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/Transforms/Autodiff.h"
#include "pipedream/Dialect/Pipe/Transforms/CostModel.h"
#include "pipedream/Driver/Driver.h"
#include "pipedream/Driver/ModelLowering.h"
#include "pipedream/Import/ONNX/ImportONNX.h"
#include "pipedream/InitAllDialects.h"
#include "pipedream/Pipelines/CommandLine.h"
#include "pipedream/Support/Diagnostics.h"
#include "pipedream/Target/CPU/CPUCodegen.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <random>

using namespace mlir;
namespace cl = llvm::cl;
namespace nn = pipedream::nn;
namespace pp = pipedream::pipe;
using Names = pipedream::nn::NNDialect;

static cl::OptionCategory category("pipedream-profile options");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<model.onnx|model.mlir>"),
                                          cl::cat(category));
static cl::opt<std::string> outputPath("o",
                                       cl::desc("Output profile (JSON; '-' "
                                                "for stdout, the default)"),
                                       cl::value_desc("PROFILE.json"),
                                       cl::init("-"), cl::cat(category));
static cl::opt<int64_t>
    batchSize("batch-size",
              cl::desc("Samples per optimizer step, as for pipedream-compile: "
                       "ops are profiled on micro-batches of "
                       "batch-size / microbatches samples"),
              cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    microbatches("microbatches",
                 cl::desc("Micro-batches per step (default 1); with "
                          "--batch-size it fixes the micro-batch size"),
                 cl::init(1), cl::cat(category));
static cl::opt<std::string>
    functionName("function",
                 cl::desc("Function to profile (default: main, else the "
                          "first public function with a body)"),
                 cl::init(""), cl::cat(category));
static cl::opt<unsigned> warmupOption("warmup",
                                      cl::desc("Untimed calls per function "
                                               "(default 2)"),
                                      cl::init(2), cl::cat(category));
static cl::opt<unsigned> repeatsOption("repeats",
                                       cl::desc("Timed samples per function; "
                                                "the median is kept (default "
                                                "10)"),
                                       cl::init(10), cl::cat(category));
static cl::opt<double> minSampleOption(
    "min-sample-time",
    cl::desc("Seconds a sample lasts at least: fast functions are called "
             "several times per sample (default 2e-5)"),
    cl::init(2e-5), cl::cat(category));
static cl::opt<uint64_t> seedOption("seed",
                                    cl::desc("Seed of the random inputs "
                                             "(default 0)"),
                                    cl::init(0), cl::cat(category));
static cl::opt<std::string>
    deviceOption("device",
                 cl::desc("Device name recorded in the profile (default cpu)"),
                 cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    linkOption("link",
               cl::desc("A measured link (pipedream-run --measure-link) to "
                        "put in the profile"),
               cl::value_desc("LINK.json"), cl::cat(category));
static cl::opt<bool> verbose("v",
                             cl::desc("Print one line per measured kernel "
                                      "on stderr"),
                             cl::cat(category));

static int fail(const llvm::Twine &message) {
  return pipedream::printError(message);
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

namespace {

/// How one buffer of a profiled function is filled before timing.
struct Fill {
  enum Kind { Float, Index, Bool, Integer } kind = Float;
  /// Index: values in [0, bound).
  int64_t bound = 1;
};

/// One function of the profiling library and where its time goes.
struct Kernel {
  std::string symbol;
  /// Arguments then results (the entry ABI, docs/Bundle.md).
  SmallVector<RankedTensorType> buffers;
  SmallVector<Fill> fills; ///< One per argument.
  /// Index of the measured group and which time: 0 forward, 1 backward
  /// input, 2 backward weight.
  size_t group = 0;
  int which = 0;
};

/// Ops measured together: same key.
struct Group {
  double times[3] = {0, 0, 0};
  bool hasBackward = false;
};

} // namespace

static int64_t elementBytes(Type type) {
  if (type.isInteger(1))
    return 1; // one byte per element (docs/Bundle.md)
  return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8);
}

static int64_t bufferBytes(RankedTensorType type) {
  return type.getNumElements() * elementBytes(type.getElementType());
}

/// Fills `data` (of `type`) as `fill` says.
static void fillBuffer(void *data, RankedTensorType type, const Fill &fill,
                       std::mt19937_64 &rng) {
  int64_t n = type.getNumElements();
  Type element = type.getElementType();
  std::uniform_real_distribution<double> uniform(0.5, 1.5);
  if (isa<FloatType>(element)) {
    // Positive values in [0.5, 1.5): every op's domain (log, sqrt, pow, div)
    // and no denormals.
    unsigned width = element.getIntOrFloatBitWidth();
    for (int64_t i = 0; i < n; ++i) {
      double v = uniform(rng);
      if (width == 64) {
        static_cast<double *>(data)[i] = v;
      } else if (width == 32) {
        static_cast<float *>(data)[i] = static_cast<float>(v);
      } else {
        // f16 / bf16: 1.0 with a random mantissa (the timing does not
        // depend on the value).
        uint16_t one = element.isBF16() ? 0x3F80 : 0x3C00;
        uint16_t mantissa = static_cast<uint16_t>(rng() & 0x3F);
        static_cast<uint16_t *>(data)[i] = one | mantissa;
      }
    }
    return;
  }
  int64_t bytes = elementBytes(element);
  auto store = [&](int64_t i, int64_t v) {
    switch (bytes) {
    case 8:
      static_cast<int64_t *>(data)[i] = v;
      break;
    case 4:
      static_cast<int32_t *>(data)[i] = static_cast<int32_t>(v);
      break;
    case 2:
      static_cast<int16_t *>(data)[i] = static_cast<int16_t>(v);
      break;
    default:
      static_cast<int8_t *>(data)[i] = static_cast<int8_t>(v);
    }
  };
  for (int64_t i = 0; i < n; ++i) {
    switch (fill.kind) {
    case Fill::Index:
      store(i, static_cast<int64_t>(rng() % static_cast<uint64_t>(
                                                std::max<int64_t>(1, fill.bound))));
      break;
    case Fill::Bool:
      store(i, static_cast<int64_t>(rng() & 1));
      break;
    default:
      // Any other integer (shapes, seeds, divisors): 1 is valid everywhere.
      store(i, 1);
    }
  }
}

//===----------------------------------------------------------------------===//
// One-op functions
//===----------------------------------------------------------------------===//

/// The fill of operand `index` of `op` (an integer operand gets the range
/// the op accepts).
static Fill operandFill(Operation *op, unsigned index, Type type) {
  Fill fill;
  Type element = cast<ShapedType>(type).getElementType();
  if (isa<FloatType>(element))
    return fill;
  if (element.isInteger(1)) {
    fill.kind = Fill::Bool;
    return fill;
  }
  fill.kind = Fill::Integer;
  StringRef name = op->getName().getStringRef();
  auto intAttr = [&](StringRef attr) -> std::optional<int64_t> {
    if (auto a = dyn_cast_or_null<IntegerAttr>(op->getAttr(attr)))
      return a.getInt();
    return std::nullopt;
  };
  if (name == "nn.gather" && index == 1) {
    auto data = cast<RankedTensorType>(op->getOperand(0).getType());
    int64_t axis = intAttr("axis").value_or(0);
    if (axis < 0)
      axis += data.getRank();
    if (axis >= 0 && axis < data.getRank()) {
      fill.kind = Fill::Index;
      fill.bound = data.getDimSize(axis);
    }
  } else if (name == "nn.gather_grad" && index == 1) {
    fill.kind = Fill::Index;
    fill.bound = intAttr("axis_size").value_or(1);
  } else if (name == "nn.one_hot" && index == 0) {
    fill.kind = Fill::Index;
    fill.bound = intAttr("depth").value_or(1);
  }
  return fill;
}

static bool isFloatTensor(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  return shaped && isa<FloatType>(shaped.getElementType());
}

namespace {
/// A one-op function and how to fill its arguments.
struct OneOpFunction {
  func::FuncOp func;
  SmallVector<Fill> fills; ///< One per argument.
  bool inputGrads = false, weightGrads = false;
};
} // namespace

/// The identity of what gets measured for `op`: op name, attributes,
/// types, and for every operand its kind (weight, frozen weight, constant
/// value, with or without gradient). Attributes are uniqued, so pointers
/// compare values.
static std::string measurementKey(Operation *op,
                                  const llvm::DenseSet<Value> &trainable,
                                  const llvm::DenseSet<Value> &frozen,
                                  const llvm::DenseSet<Value> &needsGrad) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << op->getName().getStringRef() << "|" << pp::getOpSignature(op) << "|"
     << op->getPropertiesAsAttribute().getAsOpaquePointer() << "|"
     << op->getDiscardableAttrDictionary().getAsOpaquePointer();
  llvm::DenseMap<Value, unsigned> seen;
  for (Value v : op->getOperands()) {
    os << "|";
    auto [it, fresh] = seen.try_emplace(v, seen.size());
    if (!fresh) {
      os << "same" << it->second;
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>() &&
        def->getNumOperands() == 0) {
      os << "c" << def->getName().getStringRef()
         << def->getPropertiesAsAttribute().getAsOpaquePointer()
         << def->getDiscardableAttrDictionary().getAsOpaquePointer();
    } else if (trainable.contains(v)) {
      os << "w";
    } else if (frozen.contains(v)) {
      os << "f";
    } else if (needsGrad.contains(v)) {
      os << "g";
    } else {
      os << "n";
    }
  }
  return key;
}

/// Builds `@name` computing `op` alone in `module`.
static OneOpFunction buildOneOpFunction(ModuleOp module, StringRef name,
                                        Operation *op, func::FuncOp model,
                                        const llvm::DenseSet<Value> &needsGrad) {
  MLIRContext *context = module.getContext();
  OpBuilder builder(context);
  builder.setInsertionPointToEnd(module.getBody());
  SmallVector<Value> argValues;
  SmallVector<Type> argTypes;
  OneOpFunction out;
  llvm::DenseMap<Value, unsigned> argIndex;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    Operation *def = v.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>() &&
        def->getNumOperands() == 0)
      continue;
    if (!argIndex.try_emplace(v, argValues.size()).second)
      continue;
    argValues.push_back(v);
    argTypes.push_back(v.getType());
    out.fills.push_back(operandFill(op, i, v.getType()));
  }
  auto func = func::FuncOp::create(
      builder, op->getLoc(), name,
      builder.getFunctionType(argTypes, op->getResultTypes()));
  Block *entry = func.addEntryBlock();
  IRMapping mapping;
  for (auto [i, v] : llvm::enumerate(argValues)) {
    mapping.map(v, entry->getArgument(i));
    auto modelArg = dyn_cast<BlockArgument>(v);
    bool isModelArg = modelArg && modelArg.getOwner()->getParentOp() == model;
    Attribute param =
        isModelArg ? model.getArgAttr(modelArg.getArgNumber(),
                                      Names::kParamAttrName)
                   : Attribute();
    func.setArgAttr(i, Names::kNameAttrName,
                    builder.getStringAttr("arg" + llvm::Twine(i)));
    if (param) {
      func.setArgAttr(i, Names::kParamAttrName, param);
      bool isFrozen = static_cast<bool>(model.getArgAttr(
          modelArg.getArgNumber(), Names::kFrozenAttrName));
      if (isFrozen)
        func.setArgAttr(i, Names::kFrozenAttrName, builder.getUnitAttr());
      else if (isFloatTensor(v.getType()))
        out.weightGrads = true;
    } else if (isFloatTensor(v.getType())) {
      if (needsGrad.contains(v))
        out.inputGrads = true;
      else
        func.setArgAttr(i, Names::kNoGradAttrName, builder.getUnitAttr());
    }
  }
  builder.setInsertionPointToStart(entry);
  for (Value v : op->getOperands()) {
    Operation *def = v.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>() &&
        def->getNumOperands() == 0 && !mapping.contains(v))
      builder.clone(*def, mapping);
  }
  Operation *clone = builder.clone(*op, mapping);
  func::ReturnOp::create(builder, op->getLoc(), clone->getResults());
  out.func = func;
  return out;
}

/// Records `func` (public, with a body) as a kernel of `group`; fails with
/// an error naming the function (at no location: the caller prefixes the
/// model's name).
static LogicalResult addKernel(func::FuncOp func, ArrayRef<Fill> fills,
                               size_t group, int which,
                               std::vector<Kernel> &kernels) {
  Kernel kernel;
  kernel.symbol = ("pipedream_" + func.getSymName()).str();
  kernel.group = group;
  kernel.which = which;
  kernel.fills.assign(fills.begin(), fills.end());
  for (Type t : llvm::concat<const Type>(func.getArgumentTypes(),
                                         func.getResultTypes())) {
    auto ranked = dyn_cast<RankedTensorType>(t);
    if (!ranked || !ranked.hasStaticShape())
      return pipedream::emitError(func.getContext())
             << "@" << func.getSymName()
             << ": only statically shaped tensors can be profiled (fix "
                "dynamic dimensions with --input-shape or --batch-size)";
    kernel.buffers.push_back(ranked);
  }
  kernels.push_back(std::move(kernel));
  return success();
}

/// Fills of a backward function's arguments: weights and residuals as in
/// the forward (`argFills` by `nn.name`, `residualFills` by index), every
/// gradient and carry a float.
static SmallVector<Fill> backwardFills(func::FuncOp func,
                                       const llvm::StringMap<Fill> &argFills,
                                       ArrayRef<Fill> residualFills) {
  SmallVector<Fill> fills;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    Fill fill;
    if (auto r = func.getArgAttrOfType<IntegerAttr>(i,
                                                    Names::kResidualAttrName)) {
      if (r.getInt() >= 0 &&
          static_cast<size_t>(r.getInt()) < residualFills.size())
        fill = residualFills[r.getInt()];
    } else if (auto n = func.getArgAttrOfType<StringAttr>(
                   i, Names::kNameAttrName)) {
      fill = argFills.lookup(n.getValue());
    }
    fills.push_back(fill);
  }
  return fills;
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

using EntryPoint = void (*)(void **);

static double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Median seconds per call of `fn` on `buffers`.
static double timeKernel(EntryPoint fn, void **buffers, unsigned warmup,
                         unsigned repeats, double minSample) {
  for (unsigned i = 0; i < warmup; ++i)
    fn(buffers);
  double start = now();
  fn(buffers);
  double once = std::max(now() - start, 1e-9);
  int64_t inner = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(minSample / once)), 1, 1000000);
  std::vector<double> samples;
  for (unsigned r = 0; r < std::max(1u, repeats); ++r) {
    start = now();
    for (int64_t i = 0; i < inner; ++i)
      fn(buffers);
    samples.push_back((now() - start) / inner);
  }
  std::sort(samples.begin(), samples.end());
  size_t n = samples.size();
  return n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

/// The function to profile (--function, else @main, else the first public
/// one with a body); fails with an error at no location (the caller
/// prefixes the model's name).
static FailureOr<func::FuncOp> findModelFunction(ModuleOp module) {
  if (!functionName.empty()) {
    auto func = module.lookupSymbol<func::FuncOp>(functionName);
    if (!func || func.isExternal())
      return pipedream::emitError(module.getContext())
             << "no function @" << functionName << " with a body";
    return func;
  }
  if (auto main = module.lookupSymbol<func::FuncOp>("main"))
    if (!main.isExternal())
      return main;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal())
      return func;
  return pipedream::emitError(module.getContext())
         << "no public function with a body to profile";
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // One thread: the profile is per rank, and a rank is one core. Set
  // before OpenBLAS is loaded (with the library, below).
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  setenv("OMP_NUM_THREADS", "1", 1);
  // The code generator applies the pass manager options (and
  // --mlir-print-ir-after=PASS names its passes); the lowering steps are
  // pipedream-compile's (lib/Driver).
  pipedream::CodegenFlags codegenFlags(category);
  pipedream::ImportFlags importFlags(category);
  if (!pipedream::parseCompilerCommandLine(
          argc, argv, category,
          "pipedream-profile: per-op forward/backward times of a model, as "
          "a JSON profile for --cost-model\n"))
    return 1;
  // NOTE: the in-process linker (lld) resets every command-line option to
  // its default; read what is needed after compiling now.
  const std::string output = outputPath;
  const std::string device = deviceOption;
  const unsigned warmup = warmupOption, repeats = repeatsOption;
  const double minSample = minSampleOption;
  const uint64_t seed = seedOption;
  const bool printKernels = verbose;
  pipedream::CompileOptions codegenOptions;
  codegenFlags.read(codegenOptions);
  if (inputFilename.empty())
    return fail("no input model (pipedream-profile MODEL.onnx -o "
                "PROFILE.json)");
  if (repeatsOption < 1)
    return fail("--repeats: at least 1");
  if (microbatches < 1)
    return fail("--microbatches " + llvm::Twine(microbatches.getValue()) +
                ": at least 1");
  if (batchSize.getNumOccurrences() &&
      (batchSize <= 0 || batchSize % microbatches != 0))
    return fail("--batch-size " + llvm::Twine(batchSize.getValue()) +
                ": must be a positive multiple of --microbatches (" +
                llvm::Twine(microbatches.getValue()) + ")");

  DialectRegistry registry;
  pipedream::registerAllDialects(registry);
  pipedream::registerONNXImportDialects(registry);
  pipedream::cpu::registerCPUCodegenDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  pipedream::FirstErrorHandler firstError(&context);

  // -O, --gemm, --target-cpu: checked as pipedream-compile checks them.
  pipedream::cpu::CPUCodegenOptions codegen;
  {
    auto resolved = pipedream::resolveCodegenOptions(&context, codegenOptions);
    if (failed(resolved))
      return fail(firstError.orElse("invalid code generation options"));
    codegen = resolved->cpu;
  }

  pipedream::ImportOptions importOptions;
  if (batchSize.getNumOccurrences())
    importOptions.batchSize = batchSize / microbatches;
  if (failed(importFlags.read(context, importOptions)))
    return fail(firstError.orElse("invalid --input-shape"));

  // --link: read (and checked) before the long part.
  std::optional<double> linkLatency, linkBandwidth;
  if (!linkOption.empty()) {
    FailureOr<pp::Profile> link = pp::Profile::read(linkOption, [&] {
      return mlir::emitError(mlir::UnknownLoc::get(&context)) << "--link: ";
    });
    if (failed(link))
      return fail(firstError.orElse("--link: cannot read " + linkOption));
    if (!link->linkLatency || !link->linkBandwidth)
      return fail("--link " + linkOption +
                  ": no \"link\" in it (pipedream-run --measure-link "
                  "writes one)");
    linkLatency = link->linkLatency;
    linkBandwidth = link->linkBandwidth;
  }
  // Open the output first: a bad path fails before the (longer) profiling.
  std::string openError;
  auto file = openOutputFile(output, &openError);
  if (!file)
    return fail(output + ": " + openError);

  // Import.
  OwningOpRef<ModuleOp> model;
  std::string modelName = llvm::sys::path::filename(inputFilename).str();
  if (StringRef(inputFilename).ends_with(".mlir")) {
    if (!importFlags.inputShapes().empty() || batchSize.getNumOccurrences())
      return fail("--input-shape/--batch-size apply to ONNX models, not "
                  ".mlir input");
    llvm::SourceMgr sourceMgr;
    std::string openError;
    auto file = openInputFile(inputFilename, &openError);
    if (!file)
      return fail(inputFilename + ": " + openError);
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    model = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!model)
      return fail(firstError.orElse(inputFilename + ": cannot parse"));
  } else {
    auto imported =
        pipedream::importONNXFile(inputFilename, context, importOptions);
    if (failed(imported))
      return fail(firstError.orElse(inputFilename + ": import failed"));
    pipedream::printImportNote(**imported, inputFilename);
    model = std::move(*imported);
  }
  // Errors from here on are the model's: its name starts the line.
  auto failInModel = [&] {
    return fail(modelName + ": " + firstError.orElse("profiling failed"));
  };
  FailureOr<func::FuncOp> found = findModelFunction(*model);
  if (failed(found))
    return failInModel();
  func::FuncOp modelFunc = *found;

  // Values a gradient reaches in training: those depending on a trainable
  // weight (as in the cost model).
  llvm::DenseSet<Value> trainable, frozen;
  for (BlockArgument arg : modelFunc.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (!modelFunc.getArgAttr(i, Names::kParamAttrName))
      continue;
    (modelFunc.getArgAttr(i, Names::kFrozenAttrName) ? frozen : trainable)
        .insert(arg);
  }
  llvm::DenseSet<Value> needsGrad(trainable.begin(), trainable.end());

  // One-op functions, one per distinct measurement.
  double compileStart = now();
  OwningOpRef<ModuleOp> library = ModuleOp::create(modelFunc.getLoc());
  std::vector<Kernel> kernels;
  std::vector<Group> groups;
  llvm::StringMap<size_t> groupOf;
  SmallVector<std::pair<Operation *, size_t>> measured;
  for (Operation &op : modelFunc.getBody().front()) {
    if (!pp::isPlacedOp(&op))
      continue;
    std::string key = measurementKey(&op, trainable, frozen, needsGrad);
    bool anyGrad = false;
    for (Value v : op.getOperands())
      anyGrad |= isFloatTensor(v.getType()) && needsGrad.contains(v);
    if (anyGrad)
      for (Value r : op.getResults())
        if (isFloatTensor(r.getType()))
          needsGrad.insert(r);
    auto [it, fresh] = groupOf.try_emplace(key, groups.size());
    measured.push_back({&op, it->second});
    if (!fresh)
      continue;
    size_t group = groups.size();
    groups.emplace_back();
    std::string name = "op" + std::to_string(group);
    OneOpFunction one =
        buildOneOpFunction(*library, name, &op, modelFunc, needsGrad);
    llvm::StringMap<Fill> argFills;
    for (unsigned i = 0; i < one.func.getNumArguments(); ++i)
      argFills["arg" + std::to_string(i)] = one.fills[i];

    if (one.inputGrads || one.weightGrads) {
      nn::AutodiffOptions options;
      options.splitBackward = true;
      firstError.clear();
      FailureOr<nn::DifferentiatedFunctions> grads =
          nn::differentiateFunction(one.func, options);
      if (failed(grads)) {
        // No derivative rule: the cost model falls back to its analytical
        // rule on the measured forward.
        llvm::errs() << "warning: " << pp::getOpName(&op) << " ("
                     << op.getName() << "): no backward measured: "
                     << firstError.orElse("") << "\n";
        for (StringRef suffix : {"_joint", "_forward", "_backward_input",
                                 "_backward_weight"})
          if (auto f = library->lookupSymbol<func::FuncOp>(name + suffix.str()))
            f.erase();
      } else {
        groups[group].hasBackward = true;
        // Residual fills: a residual that is an argument is filled as that
        // argument; a computed one (float) is random.
        SmallVector<Fill> residualFills;
        auto ret = cast<func::ReturnOp>(
            grads->forward.getBody().front().getTerminator());
        for (Value v : ret.getOperands().drop_front(one.func.getNumResults())) {
          Fill fill;
          if (auto arg = dyn_cast<BlockArgument>(v))
            fill = one.fills[arg.getArgNumber()];
          else if (!isFloatTensor(v.getType()))
            fill.kind = Fill::Integer;
          residualFills.push_back(fill);
        }
        grads->forward.erase();
        auto timeOrErase = [&](func::FuncOp f, bool wanted, int which) {
          // A backward that computes none of the gradients training needs
          // (only carries) costs nothing there.
          bool gradients = false;
          for (unsigned r = 0; r < f.getNumResults(); ++r)
            gradients |= static_cast<bool>(
                f.getResultAttr(r, Names::kGradOfAttrName));
          if (!wanted || !gradients) {
            f.erase();
            return success();
          }
          return addKernel(f, backwardFills(f, argFills, residualFills), group,
                           which, kernels);
        };
        if (failed(timeOrErase(grads->backwardInput, one.inputGrads, 1)) ||
            failed(timeOrErase(grads->backwardWeight, one.weightGrads, 2)))
          return failInModel();
      }
    }
    if (failed(addKernel(one.func, one.fills, group, 0, kernels)))
      return failInModel();
  }
  if (kernels.empty())
    return fail(modelName + ": @" + modelFunc.getSymName() +
                " has no op to profile");

  // Compile everything into one shared library.
  llvm::SmallString<128> tempDir;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("pipedream-profile",
                                                     tempDir))
    return fail("cannot create a temporary directory: " + ec.message());
  llvm::SmallString<128> libraryPath(tempDir);
  llvm::sys::path::append(libraryPath, "profile.so");
  auto cleanup = [&]() {
    llvm::sys::fs::remove(libraryPath);
    llvm::sys::fs::remove(tempDir);
  };
  firstError.clear();
  if (failed(pipedream::convertNNToLinalg(*library))) {
    cleanup();
    return fail(modelName + ": " +
                firstError.orElse("convert-nn-to-linalg failed"));
  }
  pipedream::stripModelAttributes(*library);
  if (failed(pipedream::cpu::compileToSharedLibrary(*library, codegen,
                                                    libraryPath))) {
    cleanup();
    return failInModel();
  }
  double compileTime = now() - compileStart;

  void *handle = dlopen(libraryPath.c_str(), RTLD_LOCAL | RTLD_NOW);
  if (!handle) {
    const char *reason = dlerror();
    cleanup();
    return fail(llvm::Twine("cannot load the profiling library: ") +
                (reason ? reason : "unknown dlopen error"));
  }
  if (auto setThreads = reinterpret_cast<void (*)(int)>(
          dlsym(handle, "openblas_set_num_threads")))
    setThreads(1);

  // Time every kernel.
  double timeStart = now();
  for (auto [k, kernel] : llvm::enumerate(kernels)) {
    auto fn = reinterpret_cast<EntryPoint>(dlsym(handle, kernel.symbol.c_str()));
    if (!fn) {
      cleanup();
      return fail("the profiling library lacks " + kernel.symbol);
    }
    std::mt19937_64 rng(seed * 1000003 + k);
    std::vector<void *> buffers;
    for (auto [b, type] : llvm::enumerate(kernel.buffers)) {
      size_t bytes = std::max<int64_t>(64, (bufferBytes(type) + 63) / 64 * 64);
      void *data = std::aligned_alloc(64, bytes);
      std::memset(data, 0, bytes);
      if (b < kernel.fills.size())
        fillBuffer(data, type, kernel.fills[b], rng);
      buffers.push_back(data);
    }
    double seconds = timeKernel(fn, buffers.data(), warmup, repeats,
                                minSample);
    // Never exactly zero: a measured op took some time.
    seconds = std::max(seconds, 1e-9);
    groups[kernel.group].times[kernel.which] = seconds;
    if (printKernels)
      llvm::errs() << kernel.symbol << ": " << seconds << " s\n";
    for (void *data : buffers)
      std::free(data);
  }
  double timingTime = now() - timeStart;
  cleanup(); // the mapping stays valid after the file is removed

  // The profile: one entry per op, named after its ONNX node.
  pp::Profile profile;
  profile.device = device;
  profile.linkLatency = linkLatency;
  profile.linkBandwidth = linkBandwidth;
  for (auto [op, group] : measured) {
    const Group &g = groups[group];
    pp::ProfileEntry entry;
    entry.name = pp::getOpName(op);
    entry.op = op->getName().getStringRef().str();
    entry.signature = pp::getOpSignature(op);
    entry.forward = g.times[0];
    if (g.hasBackward || !llvm::any_of(op->getOperands(), [&](Value v) {
          return isFloatTensor(v.getType()) &&
                 (needsGrad.contains(v) || trainable.contains(v));
        })) {
      entry.backwardInput = g.times[1];
      entry.backwardWeight = g.times[2];
    }
    profile.entries.push_back(std::move(entry));
  }
  file->os() << profile.toJSON();
  file->keep();
  llvm::errs() << llvm::formatv(
      "profiled {0} ops of @{1} ({2} distinct, {3} functions): compile "
      "{4:f1} s, timing {5:f3} s\n",
      measured.size(), modelFunc.getSymName(), groups.size(), kernels.size(),
      compileTime, timingTime);
  return 0;
}
