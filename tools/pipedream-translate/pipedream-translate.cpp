//===- pipedream-translate.cpp - ONNX to nn dialect -----------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// `pipedream-translate --import-onnx MODEL.onnx [-o OUT.mlir]
//      [--input-shape NAME=DxD ...] [--summary]`
//
// Prints the model in the nn dialect (the usual --mlir-* printing flags
// apply, e.g. --mlir-elide-elementsattrs-if-larger=16 and
// --mlir-elide-resource-strings-if-larger=16 to hide weights), or with
// --summary a short human summary of the imported model. Errors are one line
// (`error: MODEL.onnx: ...`) with a non-zero exit status.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Dialect/NN/IR/NNDialect.h"
#include "pipedream/Dialect/NN/IR/NNOps.h"
#include "pipedream/Dialect/NN/Transforms/Trainable.h"
#include "pipedream/Import/ONNX/ImportONNX.h"
#include "pipedream/Pipelines/CommandLine.h"
#include "pipedream/Support/Diagnostics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("pipedream-translate options");

static cl::opt<bool> importONNX("import-onnx",
                                cl::desc("Import an ONNX model into the nn "
                                         "dialect"),
                                cl::cat(category));
static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<model.onnx>"),
                                          cl::cat(category));
static cl::opt<std::string> outputFilename("o", cl::desc("Output file"),
                                           cl::value_desc("filename"),
                                           cl::init("-"), cl::cat(category));
static cl::opt<bool> summary("summary",
                             cl::desc("Print a summary of the imported model "
                                      "instead of its IR"),
                             cl::cat(category));

static int fail(const llvm::Twine &message) {
  return pipedream::printError(message);
}

/// "2x16xf32" style type for the summary.
static std::string typeString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

static void printSummary(ModuleOp module, llvm::raw_ostream &os) {
  auto strAttr = [&](llvm::StringRef name) -> std::string {
    auto attr = module->getAttrOfType<StringAttr>(name);
    return attr ? attr.getValue().str() : "?";
  };
  auto opsetAttr =
      module->getAttrOfType<IntegerAttr>(pipedream::import_attrs::kOpset);
  os << "model:    " << strAttr(pipedream::import_attrs::kModel) << "\n";
  std::string producer = strAttr(pipedream::import_attrs::kProducer);
  os << "producer: " << (producer.empty() ? "(unknown)" : producer) << "\n";
  os << "opset:    " << (opsetAttr ? opsetAttr.getInt() : 0) << "\n";

  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return;
  auto nameOf = [](DictionaryAttr attrs) -> std::string {
    auto name = attrs ? attrs.getAs<StringAttr>(
                            pipedream::nn::NNDialect::kNameAttrName)
                      : StringAttr();
    return name ? name.getValue().str() : "?";
  };
  int64_t numWeights = 0, numParams = 0, numBytes = 0;
  os << "inputs:\n";
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    DictionaryAttr attrs = func.getArgAttrDict(i);
    auto type = cast<RankedTensorType>(func.getArgument(i).getType());
    if (attrs && attrs.get(pipedream::nn::NNDialect::kParamAttrName)) {
      ++numWeights;
      numParams += type.getNumElements();
      numBytes += type.getNumElements() *
                  ((type.getElementTypeBitWidth() + 7) / 8);
      continue;
    }
    os << llvm::formatv("  {0,-24} {1}\n", nameOf(attrs), typeString(type));
  }
  os << "outputs:\n";
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    os << llvm::formatv("  {0,-24} {1}\n", nameOf(func.getResultAttrDict(i)),
                        typeString(func.getResultTypes()[i]));
  os << "weights:  " << numWeights << " tensors, " << numParams
     << " parameters, " << numBytes << " bytes\n";
  // What training would update with the first output as the trained one
  // (pipedream-compile without --freeze/--train).
  if (func.getNumResults()) {
    // The summary leaves the decisions out when they cannot be made: the
    // errors are captured and dropped.
    pipedream::FirstErrorHandler ignored(module.getContext());
    auto decisions = pipedream::nn::classifyWeights(func, {});
    if (succeeded(decisions))
      pipedream::nn::printWeightDecisions(*decisions, os);
  }

  llvm::MapVector<StringRef, int64_t> histogram;
  int64_t numOps = 0;
  func.walk([&](Operation *op) {
    if (isa<func::FuncOp, func::ReturnOp>(op))
      return;
    ++numOps;
    ++histogram[op->getName().getStringRef()];
  });
  auto entries = histogram.takeVector();
  llvm::sort(entries, [](const auto &a, const auto &b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  os << "ops:      " << numOps << "\n";
  for (const auto &[name, count] : entries)
    os << llvm::formatv("  {0,-24} {1}\n", name, count);
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  pipedream::ImportFlags importFlags(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "pipedream translator: ONNX -> nn dialect\n");
  if (!importONNX)
    return fail("choose a translation: --import-onnx");
  if (inputFilename.empty())
    return fail("no input model (pipedream-translate --import-onnx "
                "MODEL.onnx)");

  DialectRegistry registry;
  pipedream::registerONNXImportDialects(registry);
  MLIRContext context(registry);
  FailureOr<OwningOpRef<ModuleOp>> module = failure();
  {
    // The import's one-line error (later diagnostics print as usual).
    pipedream::FirstErrorHandler firstError(&context);
    pipedream::ImportOptions options;
    if (failed(importFlags.read(context, options)))
      return fail(firstError.orElse("invalid --input-shape"));
    module = pipedream::importONNXFile(inputFilename, context, options);
    if (failed(module))
      return fail(firstError.orElse(inputFilename + ": import failed"));
  }
  pipedream::printImportNote(**module, inputFilename);

  std::string openError;
  auto output = openOutputFile(outputFilename, &openError);
  if (!output)
    return fail(outputFilename + ": " + openError);
  if (summary)
    printSummary(**module, output->os());
  else
    (*module)->print(output->os(), OpPrintingFlags());
  output->keep();
  return 0;
}
