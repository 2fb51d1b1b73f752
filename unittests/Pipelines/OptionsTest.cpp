//===- OptionsTest.cpp - resolvePhaseOptions ------------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The defaults and checks of include/pipedream/Pipelines/Options.h: one
// resolution for the single-rank and the pipelined compile, so an option
// means the same in both.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Pipelines/Options.h"
#include "pipedream/Support/Diagnostics.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace pipedream;
namespace sched = pipedream::pipe::schedule;

namespace {

/// A training compile of a model; `stages` > 1 makes it a pipeline bundle.
CompileOptions training(int64_t stages = 1) {
  CompileOptions o;
  o.input = "model.onnx";
  o.output = "out";
  o.loss = "cross-entropy";
  // The compiling machine's CPU is not what these tests are about.
  o.targetCPU = "x86-64";
  if (stages > 1)
    o.stages = stages;
  return o;
}

PhaseOptions resolve(const CompileOptions &o) {
  MLIRContext context;
  FirstErrorHandler errors(&context);
  FailureOr<PhaseOptions> p = resolvePhaseOptions(&context, o);
  EXPECT_TRUE(succeeded(p)) << errors.orElse("");
  return succeeded(p) ? *p : PhaseOptions();
}

std::string errorOf(const CompileOptions &o) {
  MLIRContext context;
  FirstErrorHandler errors(&context);
  EXPECT_TRUE(failed(resolvePhaseOptions(&context, o)));
  return errors.orElse("");
}

TEST(Options, SGDWithMomentumIsMomentumInBothFlows) {
  for (int64_t stages : {1, 2}) {
    CompileOptions o = training(stages);
    o.optimizer = "sgd";
    o.momentum = 0.9;
    PhaseOptions p = resolve(o);
    EXPECT_EQ(p.pipelined, stages > 1);
    EXPECT_EQ(p.training.nn.optimizer.kind, nn::OptimizerKind::Momentum);
    EXPECT_DOUBLE_EQ(p.training.nn.optimizer.momentum, 0.9);
    EXPECT_EQ(p.training.optimizerStates(), 1);
    if (stages > 1)
      EXPECT_EQ(p.partition.optimizerStates, 1);
  }
  // A zero momentum stays plain SGD.
  CompileOptions o = training(2);
  o.momentum = 0.0;
  EXPECT_EQ(resolve(o).training.nn.optimizer.kind, nn::OptimizerKind::SGD);
  EXPECT_EQ(resolve(o).partition.optimizerStates, 0);
}

TEST(Options, Defaults) {
  PhaseOptions single = resolve(training());
  EXPECT_FALSE(single.pipelined);
  EXPECT_EQ(single.training.nn.microbatches, 1);
  EXPECT_DOUBLE_EQ(single.training.nn.optimizer.lr, 0.01);
  EXPECT_EQ(single.emit, CompilePhase::Bundle);

  PhaseOptions piped = resolve(training(4));
  EXPECT_TRUE(piped.pipelined);
  EXPECT_TRUE(piped.scheduled());
  // M defaults to K, in the partitioner and in the schedule alike.
  EXPECT_EQ(piped.training.nn.microbatches, 4);
  EXPECT_EQ(piped.partition.microbatches, 4);
  EXPECT_EQ(piped.schedule.config.numMicrobatches, 4);
  EXPECT_EQ(piped.schedule.config.numRanks, 4);
  EXPECT_EQ(piped.partition.schedule, sched::Kind::OneFOneB);

  CompileOptions adam = training(2);
  adam.optimizer = "adam";
  EXPECT_DOUBLE_EQ(resolve(adam).training.nn.optimizer.lr, 0.001);
  EXPECT_EQ(resolve(adam).partition.optimizerStates, 2);
}

TEST(Options, ScheduleReachesThePartitioner) {
  CompileOptions o = training(4);
  o.schedule = "gpipe";
  o.microbatches = 8;
  PhaseOptions p = resolve(o);
  EXPECT_EQ(p.partition.schedule, sched::Kind::GPipe);
  EXPECT_EQ(p.schedule.config.kind, sched::Kind::GPipe);
  EXPECT_EQ(p.partition.microbatches, 8);

  o.schedule = "pipedream";
  EXPECT_EQ(resolve(o).schedule.microbatchesPerUpdate, 1);
  o.schedule = "2bw";
  EXPECT_EQ(resolve(o).schedule.microbatchesPerUpdate, 4);
  o.schedule = "fifo";
  EXPECT_NE(errorOf(o).find("--schedule fifo"), std::string::npos);
}

TEST(Options, SplitAfterDerivesTheStages) {
  CompileOptions o = training();
  o.splitAfter = {"a", "b"};
  PhaseOptions p = resolve(o);
  EXPECT_TRUE(p.pipelined);
  EXPECT_EQ(p.partition.stages, 3);
  EXPECT_EQ(p.schedule.config.numRanks, 3);
  EXPECT_EQ(p.schedule.config.numMicrobatches, 3);
}

TEST(Options, CodegenChecksInBothFlows) {
  for (int64_t stages : {1, 2}) {
    CompileOptions o = training(stages);
    o.gemm = "fast";
    EXPECT_EQ(errorOf(o), "--gemm fast: expected auto, kernel, vectorize, "
                          "blas or loops");
    o = training(stages);
    o.optLevel = 4;
    EXPECT_EQ(errorOf(o), "-O4: the optimization level is 0 to 3");
    o = training(stages);
    o.targetCPU = "pentium9";
    EXPECT_NE(errorOf(o).find("pentium9"), std::string::npos);
    o = training(stages);
    o.emit = stages > 1 ? "scheduled" : "train";
    o.gemm = "fast";
    EXPECT_NE(errorOf(o).find("--gemm fast"), std::string::npos);
  }
}

TEST(Options, OptimizerChecksInBothFlows) {
  for (int64_t stages : {1, 2}) {
    CompileOptions o = training(stages);
    o.optimizer = "adam";
    o.momentum = 0.9;
    EXPECT_NE(errorOf(o).find("--momentum applies to sgd"), std::string::npos);
    o = training(stages);
    o.nesterov = true;
    EXPECT_NE(errorOf(o).find("--nesterov needs momentum"), std::string::npos);
    o = training(stages);
    o.lr = 0.0;
    EXPECT_NE(errorOf(o).find("out of range"), std::string::npos);
    o = training(stages);
    o.microbatches = 0;
    EXPECT_EQ(errorOf(o), "--microbatches 0: at least 1");
    o = training(stages);
    o.batchSize = 7;
    o.microbatches = 2;
    EXPECT_NE(errorOf(o).find("--batch-size 7"), std::string::npos);
  }
}

TEST(Options, FlagsThatDoNotApply) {
  CompileOptions o = training();
  o.loss.reset();
  o.inference = true;
  o.stages = 2;
  EXPECT_NE(errorOf(o).find("--stages/--virtual-stages/--split-after apply "
                            "to pipelines"),
            std::string::npos);
  o.stages.reset();
  o.optimizer = "adam";
  EXPECT_EQ(errorOf(o), "--optimizer is a training flag; it does not apply "
                        "to --inference");
  // Partitioning a forward-only model is fine; scheduling it is not.
  o.optimizer.reset();
  o.stages = 2;
  o.emit = "partitioned";
  EXPECT_TRUE(resolve(o).pipelined);
  o.emit = "scheduled";
  EXPECT_NE(errorOf(o).find("a pipeline trains"), std::string::npos);
}

} // namespace

TEST(Options, ReplicasSplitTheMicrobatches) {
  CompileOptions o = training(2);
  o.replicas = 2;
  o.microbatches = 8;
  o.batchSize = 32;
  PhaseOptions p = resolve(o);
  EXPECT_TRUE(p.pipelined);
  // M is the step's: each replica's schedule runs M/R; the micro-batch is
  // the batch / M.
  EXPECT_EQ(p.schedule.replicas, 2);
  EXPECT_EQ(p.schedule.config.numMicrobatches, 4);
  EXPECT_EQ(p.schedule.microbatchesPerUpdate, 4);
  EXPECT_EQ(p.partition.microbatches, 4);
  EXPECT_EQ(p.import.microbatchSize, 4);
  EXPECT_FALSE(p.schedule.shardOptimizer);
  // M defaults to K x R.
  CompileOptions d = training(2);
  d.replicas = 3;
  EXPECT_EQ(resolve(d).schedule.config.numMicrobatches, 2);
  // A replicated single stage is a (one-stage) pipeline.
  CompileOptions one = training();
  one.replicas = 2;
  EXPECT_TRUE(resolve(one).pipelined);

  o.shardOptimizer = true;
  EXPECT_TRUE(resolve(o).schedule.shardOptimizer);
  o.microbatches = 7;
  EXPECT_NE(errorOf(o).find("must be a multiple of --replicas 2"),
            std::string::npos);
  o.microbatches = 8;
  o.schedule = "2bw";
  EXPECT_NE(errorOf(o).find("need a synchronous schedule"), std::string::npos);
  CompileOptions noReplicas = training(2);
  noReplicas.shardOptimizer = true;
  EXPECT_NE(errorOf(noReplicas).find("pass --replicas R (R >= 2)"),
            std::string::npos);
}

TEST(Options, RanksLeaveKAndRToThePlanner) {
  CompileOptions o = training();
  o.ranks = 4;
  o.microbatches = 8;
  PhaseOptions p = resolve(o);
  EXPECT_TRUE(p.pipelined);
  EXPECT_EQ(p.partition.ranks, 4);
  EXPECT_EQ(p.partition.microbatches, 8);
  MLIRContext context;
  FirstErrorHandler errors(&context);
  ASSERT_TRUE(succeeded(applyReplicationPlan(&context, p, 2, 2)))
      << errors.orElse("");
  EXPECT_EQ(p.partition.stages, 2);
  EXPECT_EQ(p.schedule.config.numRanks, 2);
  EXPECT_EQ(p.schedule.config.numMicrobatches, 4);
  EXPECT_EQ(p.schedule.replicas, 2);
  EXPECT_TRUE(failed(applyReplicationPlan(&context, p, 1, 3)));
  EXPECT_NE(errors.orElse("").find("plan does not divide the 8 micro-batches"),
            std::string::npos);
  o.stages = 2;
  EXPECT_NE(errorOf(o).find("drop --stages/--replicas"), std::string::npos);
}
