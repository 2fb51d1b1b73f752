//===- Training.h - loss, gradient accumulation, optimizer ------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Turns an inference function `@main(inputs..., weights...) -> (prediction,
// ...)` into the two functions of a training bundle (docs/Bundle.md,
// "Training bundles"):
//
//   @train_microbatch(inputs..., labels, weights..., [rng_seed], grads...)
//       -> (loss, grads'..., running statistics'..., [rng_seed'])
//   @update(trainable weights..., grads..., optimizer state...)
//       -> (weights'..., state'...)
//
// The forward runs in training mode (BatchNormalization with batch
// statistics and running-stat updates, Dropout with a seeded mask), the
// loss joins the prediction, `nn-autodiff`'s joint function gives the
// gradients of the step loss (scaled by 1/M), added to the accumulators.
// `@update` is one torch.optim step. Results that replace a persistent
// buffer carry `nn.updates`.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_NN_TRANSFORMS_TRAINING_H
#define PIPEDREAM_DIALECT_NN_TRANSFORMS_TRAINING_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace pipedream::nn {

/// `None`: the inference function's first result already is the (scalar)
/// loss; there are no labels.
enum class LossKind { CrossEntropy, MSE, None };
enum class OptimizerKind { SGD, Momentum, Adam, AdamW };
/// How the learning rate changes with the optimizer step (docs/Training.md,
/// "Learning-rate schedules"): a linear warm-up over `warmupSteps`, then
/// the same rate (`Constant`), a linear decay to 0 at `totalSteps`
/// (`Linear`) or a half cosine to 0 at `totalSteps` (`Cosine`); the
/// schedules of transformers'
/// get_{constant,linear,cosine}_schedule_with_warmup.
enum class LRScheduleKind { Constant, Linear, Cosine };

std::optional<LossKind> parseLossKind(llvm::StringRef text);
llvm::StringRef stringifyLossKind(LossKind kind);
std::optional<OptimizerKind> parseOptimizerKind(llvm::StringRef text);
llvm::StringRef stringifyOptimizerKind(OptimizerKind kind);
std::optional<LRScheduleKind> parseLRScheduleKind(llvm::StringRef text);
llvm::StringRef stringifyLRScheduleKind(LRScheduleKind kind);

struct OptimizerOptions;
/// Sets `opt.clipGradNorm` from a pass's option, or emits at `anchor` and
/// fails when it is negative or not finite.
mlir::LogicalResult parseClipGradNorm(mlir::Operation *anchor,
                                      llvm::StringRef pass, double maxNorm,
                                      OptimizerOptions &opt);
/// Sets `opt`'s schedule from a pass's options, or emits at `anchor`
/// (prefixed by the pass name) and fails when they are out of range.
mlir::LogicalResult parseLRSchedule(mlir::Operation *anchor,
                                    llvm::StringRef pass, llvm::StringRef kind,
                                    int64_t warmupSteps, int64_t totalSteps,
                                    OptimizerOptions &opt);

/// torch.optim hyper-parameters. `momentum` applies to `Momentum` (SGD with
/// momentum; 0.9 when not given); Adam/AdamW use beta1/beta2/eps.
struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::SGD;
  double lr = 0.01;
  double momentum = 0.9;
  double weightDecay = 0.0;
  bool nesterov = false;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  /// The rate of optimizer step s (0-based) is lr * factor(s) (see
  /// LRScheduleKind); `totalSteps` is needed by Linear and Cosine.
  LRScheduleKind lrSchedule = LRScheduleKind::Constant;
  int64_t warmupSteps = 0;
  int64_t totalSteps = 0;
  /// Gradient clipping (torch.nn.utils.clip_grad_norm_ with norm_type 2):
  /// every gradient is scaled by min(1, clipGradNorm / (norm + 1e-6)) before
  /// the step, `norm` the 2-norm of all the updated weights' gradients
  /// together; 0: no clipping.
  double clipGradNorm = 0.0;

  /// Whether the rate changes from step to step (the update then keeps a
  /// step counter whatever the optimizer).
  bool hasLRSchedule() const {
    return lrSchedule != LRScheduleKind::Constant || warmupSteps > 0;
  }
};

struct TrainingOptions {
  /// The inference function to train.
  std::string function = "main";
  LossKind loss = LossKind::CrossEntropy;
  /// Name of the labels input (`nn.name`).
  std::string labelsName = "labels";
  /// Micro-batches per step (the gradient of each is scaled by 1/M).
  int64_t microbatches = 1;
  OptimizerOptions optimizer;
  /// Also build `evaluate` (kEvaluateFunction): the loss of one micro-batch
  /// through the forward as imported (eval mode: Dropout off, BatchNorm
  /// with the running statistics), reading the weights the step trains and
  /// changing nothing.
  bool evaluate = false;
};

/// The evaluation function nn-build-training builds with `evaluate`.
inline constexpr llvm::StringLiteral kEvaluateFunction = "evaluate";

/// What the training functions expect, for the bundle manifest.
struct TrainingInfo {
  /// Names of the data inputs, in argument order (labels excluded).
  llvm::SmallVector<std::string> inputNames;
  /// Cross-entropy: the number of classes (last axis of the prediction).
  int64_t numClasses = 0;
  /// First axis of the first input (samples per micro-batch), 0 if rank 0.
  int64_t microbatchSize = 0;
  /// Trainable weights and weights that are only updated (running stats).
  llvm::SmallVector<std::string> trainableWeights, frozenWeights;
  /// Whether the step function uses a random seed state (Dropout).
  bool usesRandomSeed = false;
  /// Whether the step function writes the gradients instead of adding
  /// them to the accumulators (one micro-batch a step; bundle.json
  /// `training.gradients`).
  bool gradientsWritten = false;
  /// With options.evaluate: the evaluation function's name (bundle.json
  /// `training.eval_function`), else empty.
  std::string evaluateFunction;
};

/// Clones the ops of `body` (not its terminator) at `b` in training mode:
/// BatchNormalization with batch statistics (`nn.batch_norm_train`; each
/// (running-statistic operand, updated value) pair is appended to
/// `statUpdates`) and, when `seed` (rank-0 i64) is given, Dropout as
/// `x * bernoulli(seed + k * 1000003) / (1 - ratio)` where k counts the
/// Dropout ops from `firstDropout + 1` (a pipeline stage passes the number
/// of Dropout ops of the stages before it, so every op draws the same mask
/// as in the whole model).
void cloneInTrainingMode(
    mlir::OpBuilder &b, mlir::Block &body, mlir::IRMapping &mapping,
    mlir::Value seed,
    llvm::SmallVectorImpl<std::pair<mlir::Value, mlir::Value>> &statUpdates,
    int64_t firstDropout = 0);

/// Number of Dropout ops of `body` that need a random mask in training.
int64_t countRandomDropouts(mlir::Block &body);

/// Whether `body` has a Dropout that needs a random seed in training.
bool needsRandomSeed(mlir::Block &body);

/// The labels of `kind` for `prediction`: class indices (i64, the
/// prediction's shape without its last axis) or a float target of the
/// prediction's type. Fails for cross-entropy on a rank-0 prediction.
mlir::FailureOr<mlir::RankedTensorType>
getLabelsType(LossKind kind, mlir::RankedTensorType prediction);

/// The mean loss (rank 0) of `prediction` against `labels`.
mlir::Value buildLoss(mlir::OpBuilder &b, mlir::Location loc, LossKind kind,
                      mlir::Value prediction, mlir::Value labels);

/// One weight the optimizer updates: its name, type and argument attributes
/// (`nn.param`...).
struct UpdateWeight {
  std::string name;
  mlir::Type type;
  mlir::DictionaryAttr attrs;
};

/// The sum of the squares of every element of `tensors` (rank 0, of
/// `elementType`): the squared 2-norm of all of them together.
mlir::Value buildSquaredNorm(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::ValueRange tensors, mlir::Type elementType);

/// The gradient buffer (rank 0) of gradient clipping's squared norm:
/// written by a single-rank update (the runtime reports its root as the
/// step's gradient norm), and in a pipeline the sum of the stages' parts
/// that each stage's update reads (docs/Pipe.md, "Gradient clipping";
/// pipe::PipeDialect::kGradNormBuffer is the same name).
inline constexpr llvm::StringLiteral kGradNormBuffer =
    "grad:pipedream.grad_norm_sq";

/// Builds `@name(weights..., grad:<w>..., state..., [grad norm]) ->
/// (weights'..., state'..., [grad norm'])`, one torch.optim step, at `b`.
/// The step counter of Adam (and of every optimizer with a learning-rate
/// schedule) is the state buffer `stepName`. With `opt.clipGradNorm`, the
/// gradients are clipped first: by the norm whose square is the last
/// argument, the bound `grad` buffer `gradNormName` (rank 0), when that is
/// given (a pipeline stage); else by their own joint norm, whose square the
/// update then writes to the bound `grad` buffer `reportNormTo` when that
/// is given.
mlir::func::FuncOp buildOptimizerUpdate(mlir::OpBuilder &b, mlir::Location loc,
                                        llvm::StringRef name,
                                        llvm::ArrayRef<UpdateWeight> weights,
                                        const OptimizerOptions &opt,
                                        llvm::StringRef stepName,
                                        llvm::StringRef gradNormName = {},
                                        llvm::StringRef reportNormTo = {});

/// Replaces `options.function` in `module` by `@train_microbatch` and
/// `@update`. Fails with a diagnostic (the op or the function) on models it
/// cannot train: a loss that does not fit the prediction, an op without a
/// derivative rule on the path to the loss, a labels name already taken.
mlir::FailureOr<TrainingInfo>
buildTrainingFunctions(mlir::ModuleOp module, const TrainingOptions &options);

} // namespace pipedream::nn

#endif // PIPEDREAM_DIALECT_NN_TRANSFORMS_TRAINING_H
