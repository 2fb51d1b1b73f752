//===- Trainable.h - which weights are parameters ---------------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Decides, for every weight (`nn.param` argument) of an inference function,
// whether training updates it (a parameter, as torch's nn.Parameter) or
// keeps it fixed (a constant or a buffer). docs/Training.md, "Trainable and
// frozen weights", gives the rule and why:
//
//   trainable  = float, read, not a BatchNormalization running statistic,
//                not rank 0 (a scalar constant: eps, an exponent, a scale),
//                and reaching the trained result through parameter operands
//                (GradientOpInterface::isDifferentiableOperand of every op on
//                the way, a float result, and not the exponent of `nn.pow`).
//   torch's dynamo exporter's record (`nn.origin`, from its export
//   signature) decides first when present: a torch parameter (or a fold
//   of exactly one) is trainable if it reaches the result, a buffer or a
//   constant the exporter computed is frozen;
//   --train P  makes a float weight trainable whatever the rule says;
//   --freeze P makes any weight frozen.
//
// Frozen weights get `nn.frozen`: nn-autodiff gives them no gradient,
// nn-build-training and pipe-build-stage-training leave them out of the
// optimizer update (no state, never written).
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_NN_TRANSFORMS_TRAINABLE_H
#define PIPEDREAM_DIALECT_NN_TRANSFORMS_TRAINABLE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace pipedream::nn {

/// Whether every use of `arg` is as running mean/variance of a
/// BatchNormalization (a statistic the step updates, not a parameter).
bool isRunningStatistic(mlir::BlockArgument arg);

/// The user's overrides: each entry an exact weight name or a POSIX
/// extended regular expression matched against the whole name; entries may
/// be comma-separated lists.
struct TrainableOptions {
  llvm::SmallVector<std::string> freeze, train;
  /// The result that is trained (its loss, or the loss itself).
  unsigned trainedResult = 0;
};

/// The decision for one weight.
struct WeightDecision {
  enum class Kind { Trainable, Frozen, Statistic };
  std::string name;
  Kind kind = Kind::Frozen;
  /// Why: "parameter", "--train", "--freeze", "nn.frozen", "integer",
  /// "unused", "running statistic", "scalar constant",
  /// "no differentiable path to the loss".
  std::string reason;
  int64_t numElements = 0;
  /// Non-empty when the decision may not be what the user wants (a weight
  /// the exporter computed from a parameter): the driver prints it.
  std::string warning;
};

/// Classifies the weights of `func` (argument order) without changing it.
/// Fails with a diagnostic on `func` for an override that names nothing,
/// an invalid regular expression, a weight both frozen and trained, or
/// `--train` of a weight that cannot be trained (not a float tensor, a
/// running statistic). `constantInitializers` are names the importer made
/// constants (integer and bool initializers): `--train` of one is an error
/// naming it.
mlir::FailureOr<llvm::SmallVector<WeightDecision>>
classifyWeights(mlir::func::FuncOp func, const TrainableOptions &options,
                llvm::ArrayRef<std::string> constantInitializers = {});

/// classifyWeights, then `nn.frozen` on every frozen weight (removed from
/// the ones `--train` names). Returns the decisions.
mlir::FailureOr<llvm::SmallVector<WeightDecision>>
markFrozenWeights(mlir::func::FuncOp func, const TrainableOptions &options,
                  llvm::ArrayRef<std::string> constantInitializers = {});

/// `{"trainable": {"count", "elements", "names"}, "frozen": {... "names":
/// [{"name", "reason"}]}}` for a report.
llvm::json::Object weightDecisionsJSON(llvm::ArrayRef<WeightDecision> decisions);

/// Two lines and one line per frozen weight, for `--report` and
/// `--summary`.
void printWeightDecisions(llvm::ArrayRef<WeightDecision> decisions,
                          llvm::raw_ostream &os);

} // namespace pipedream::nn

#endif // PIPEDREAM_DIALECT_NN_TRANSFORMS_TRAINABLE_H
