//===- Pipelines.h - the pass pipelines of each compile phase ---*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// One builder per phase, from the phase's typed options (Options.h), with
// the passes' own option structs (no textual pipelines). pipedream-compile
// (lib/Driver) runs these builders; registerPipedreamPipelines makes the
// same builders available to pipedream-opt:
//
//   pipedream-opt model.onnx \
//     --pipedream-training-pipeline="stages=2 schedule=1f1b microbatches=4"
//
// imports the model and prints the verified per-rank programs.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_PIPELINES_PIPELINES_H
#define PIPEDREAM_PIPELINES_PIPELINES_H

#include "pipedream/Pipelines/Options.h"

#include "mlir/Pass/PassManager.h"

namespace pipedream {

/// nn-mark-trainable on @main with --freeze/--train (pipedream-compile calls
/// the library, nn::markFrozenWeights, to keep the decisions for its
/// report).
void buildMarkTrainablePipeline(mlir::OpPassManager &pm,
                                const TrainingPhaseOptions &options);

/// pipe-annotate-costs and pipe-partition: every op of @main gets its
/// `pipe.stage`.
void buildPartitionPipeline(mlir::OpPassManager &pm,
                            const PartitionPhaseOptions &options);

/// pipe-outline-stages: one function per stage.
void buildOutlinePipeline(mlir::OpPassManager &pm);

/// pipe-build-stage-training, pipe-unroll-schedule, pipe-project-ranks
/// (keeping the global program) and pipe-verify-schedule, on an outlined
/// module.
void buildSchedulePipeline(mlir::OpPassManager &pm,
                           const TrainingPhaseOptions &training,
                           const SchedulePhaseOptions &schedule);

/// Mark-trainable, partition, outline and schedule: an imported model to
/// its verified per-rank programs (what `--emit scheduled` prints).
void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const PhaseOptions &options);

/// Registers `pipedream-partition-pipeline` and
/// `pipedream-training-pipeline`, whose options are pipedream-compile's
/// flags of the same names (resolved and checked by resolvePhaseOptions).
void registerPipedreamPipelines();

} // namespace pipedream

#endif // PIPEDREAM_PIPELINES_PIPELINES_H
