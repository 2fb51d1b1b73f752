//===- PipelineUtil.h - pipeline bundles of TestProgram.c's chain -*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// bundle.json and weights.bin of TestProgram.c's linear chain (K = 2 or 4
// stages, M = 4 micro-batches of 2 rows, mse, SGD with momentum): as a
// pipeline bundle (one program per rank, GPipe or 1F1B, written here the
// way pipe-project-ranks lays them out) and as the equivalent single-rank
// training bundle. test/Tools/pipedream-run/Inputs/pipeline.py writes the
// same bundles for the lit tests.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_RUNTIME_TEST_PIPELINEUTIL_H
#define PIPEDREAM_RUNTIME_TEST_PIPELINEUTIL_H

#include "pipedream/runtime.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace pipedream {
namespace test {

constexpr int kChainMicrobatches = 4;

/// Weight names of the chain of K stages: W0 .. W{K-2}, then w.
inline std::vector<std::string> chainWeightNames(int stages) {
  std::vector<std::string> names;
  for (int s = 0; s + 1 < stages; ++s)
    names.push_back("W" + std::to_string(s));
  names.push_back("w");
  return names;
}

inline std::vector<float> chainWeightValues(int index, bool last) {
  if (last)
    return {0.7f, -0.4f};
  float a = 0.1f * static_cast<float>(index);
  return {0.5f + a, -0.3f, 0.2f, 0.8f - a};
}

/// The `weights` entries and the weights.bin bytes (64-byte aligned).
inline nlohmann::json chainWeights(int stages, std::string &bytes) {
  nlohmann::json weights = nlohmann::json::array();
  bytes.clear();
  std::vector<std::string> names = chainWeightNames(stages);
  for (size_t i = 0; i < names.size(); ++i) {
    bool last = i + 1 == names.size();
    std::vector<float> values = chainWeightValues(static_cast<int>(i), last);
    size_t offset = bytes.size();
    bytes.resize(offset + 64, '\0');
    std::memcpy(&bytes[offset], values.data(), values.size() * sizeof(float));
    weights.push_back({{"name", names[i]},
                       {"dtype", "f32"},
                       {"shape", last ? nlohmann::json{2} : nlohmann::json{2, 2}},
                       {"offset", offset},
                       {"bytes", values.size() * sizeof(float)}});
  }
  return weights;
}

inline nlohmann::json chainBuffer(const std::string &name, const char *role,
                                  std::vector<int64_t> shape,
                                  const std::string &updates = "") {
  nlohmann::json b = {
      {"name", name}, {"role", role}, {"dtype", "f32"}, {"shape", shape}};
  if (!updates.empty())
    b["updates"] = updates;
  return b;
}

inline nlohmann::json chainBase(nlohmann::json weights) {
  return {{"format", "pipedream-bundle"}, {"version", 2},
          {"model", "model.onnx"},        {"library", "program.so"},
          {"weights_file", "weights.bin"}, {"weights", std::move(weights)}};
}

/// The stage functions stage<s>_F/_B/_U of the chain of K stages.
inline nlohmann::json chainStageFunctions(int stages) {
  nlohmann::json functions = nlohmann::json::array();
  using V = std::vector<int64_t>;
  for (int s = 0; s < stages; ++s) {
    bool last = s + 1 == stages;
    std::string st = "stage" + std::to_string(s);
    std::string w = last ? "w" : "W" + std::to_string(s);
    V ws = last ? V{2} : V{2, 2};
    std::string sym = last ? "pipedream_chain_last_"
                           : "pipedream_chain_mid_";
    std::string suffix = last ? "" : std::to_string(s);
    nlohmann::json f, b, u;
    if (last) {
      f = {chainBuffer("h", "input", {2, 2}), chainBuffer("y", "input", {2}),
           chainBuffer(w, "weight", ws), chainBuffer("loss", "output", {}),
           chainBuffer("res", "output", {2, 2}),
           chainBuffer("err", "output", {2})};
      b = {chainBuffer("res", "input", {2, 2}),
           chainBuffer("err", "input", {2}), chainBuffer(w, "weight", ws),
           chainBuffer("grad:" + w, "grad", ws),
           chainBuffer("dh", "output", {2, 2}),
           chainBuffer("grad:" + w + "'", "output", ws, "grad:" + w)};
    } else {
      f = {chainBuffer("h", "input", {2, 2}), chainBuffer(w, "weight", ws),
           chainBuffer("out", "output", {2, 2}),
           chainBuffer("res", "output", {2, 2})};
      b = {chainBuffer("res", "input", {2, 2}),
           chainBuffer("dout", "input", {2, 2}), chainBuffer(w, "weight", ws),
           chainBuffer("grad:" + w, "grad", ws),
           chainBuffer("din", "output", {2, 2}),
           chainBuffer("grad:" + w + "'", "output", ws, "grad:" + w)};
    }
    u = {chainBuffer(w, "weight", ws), chainBuffer("grad:" + w, "grad", ws),
         chainBuffer("momentum_buffer:" + w, "state", ws),
         chainBuffer(w + "'", "output", ws, w),
         chainBuffer("momentum_buffer:" + w + "'", "output", ws,
                     "momentum_buffer:" + w)};
    functions.push_back({{"name", st + "_F"}, {"symbol", sym + "F" + suffix},
                         {"kind", "forward"}, {"buffers", f}});
    functions.push_back({{"name", st + "_B"}, {"symbol", sym + "B" + suffix},
                         {"kind", "backward"}, {"buffers", b}});
    functions.push_back({{"name", st + "_U"}, {"symbol", sym + "U" + suffix},
                         {"kind", "update"}, {"buffers", u}});
  }
  return functions;
}

/// One program per rank (rank = stage) of the chain: `kind` "gpipe" (all F,
/// then all B) or "1f1b" (K-1-r warm-up forwards, then alternate); fresh
/// registers for every value (no reuse); activations to the next stage with
/// tag 2m, gradients back with tag 2m+1.
inline nlohmann::json chainRanks(int stages, const std::string &kind,
                                 int M = kChainMicrobatches) {
  nlohmann::json ranks = nlohmann::json::array();
  for (int s = 0; s < stages; ++s) {
    bool last = s + 1 == stages;
    nlohmann::json registers = nlohmann::json::array();
    nlohmann::json program = nlohmann::json::array();
    auto reg = [&](std::vector<int64_t> shape) {
      registers.push_back({{"dtype", "f32"}, {"shape", shape}});
      return registers.size() - 1;
    };
    std::vector<size_t> res(M), err(M);
    auto forward = [&](int m) {
      size_t h = reg({2, 2});
      if (s == 0)
        program.push_back(
            {{"op", "input"}, {"name", "x"}, {"microbatch", m}, {"dst", h}});
      else
        program.push_back({{"op", "recv"}, {"dst", h}, {"peer", s - 1},
                           {"tag", 2 * m}});
      std::string f = "stage" + std::to_string(s) + "_F";
      if (!last) {
        size_t out = reg({2, 2});
        res[m] = reg({2, 2});
        program.push_back({{"op", "call"}, {"function", f}, {"action", "F"},
                           {"stage", s}, {"microbatch", m}, {"args", {h}},
                           {"results", {out, res[m]}}});
        program.push_back({{"op", "send"}, {"src", out}, {"peer", s + 1},
                           {"tag", 2 * m}});
      } else {
        size_t y = reg({2}), loss = reg({});
        res[m] = reg({2, 2});
        err[m] = reg({2});
        program.push_back(
            {{"op", "input"}, {"name", "y"}, {"microbatch", m}, {"dst", y}});
        program.push_back({{"op", "call"}, {"function", f}, {"action", "F"},
                           {"stage", s}, {"microbatch", m}, {"args", {h, y}},
                           {"results", {loss, res[m], err[m]}}});
        program.push_back({{"op", "loss"}, {"src", loss}, {"microbatch", m}});
      }
    };
    auto backward = [&](int m) {
      std::string b = "stage" + std::to_string(s) + "_B";
      size_t din = reg({2, 2});
      if (last) {
        program.push_back({{"op", "call"}, {"function", b}, {"action", "B"},
                           {"stage", s}, {"microbatch", m},
                           {"args", {res[m], err[m]}}, {"results", {din}}});
      } else {
        size_t dout = reg({2, 2});
        program.push_back({{"op", "recv"}, {"dst", dout}, {"peer", s + 1},
                           {"tag", 2 * m + 1}});
        program.push_back({{"op", "call"}, {"function", b}, {"action", "B"},
                           {"stage", s}, {"microbatch", m},
                           {"args", {res[m], dout}}, {"results", {din}}});
      }
      if (s > 0)
        program.push_back({{"op", "send"}, {"src", din}, {"peer", s - 1},
                           {"tag", 2 * m + 1}});
    };
    if (kind == "gpipe") {
      for (int m = 0; m < M; ++m)
        forward(m);
      for (int m = 0; m < M; ++m)
        backward(m);
    } else {
      int warm = std::min(stages - 1 - s, M);
      for (int m = 0; m < warm; ++m)
        forward(m);
      for (int m = 0; m < M; ++m) {
        if (warm + m < M)
          forward(warm + m);
        backward(m);
      }
    }
    program.push_back({{"op", "call"},
                       {"function", "stage" + std::to_string(s) + "_U"},
                       {"action", "U"}, {"stage", s}, {"args", nlohmann::json::array()},
                       {"results", nlohmann::json::array()}});
    ranks.push_back(
        {{"rank", s}, {"registers", registers}, {"program", program}});
  }
  return ranks;
}

/// `eval` of each rank of the chain (docs/Bundle.md "Evaluation in
/// pipelines"): the forward of micro-batch 0 only (the chain's F updates
/// nothing, so it serves as the evaluation function), as chainRanks lays
/// it out.
inline void addChainEval(nlohmann::json &manifest) {
  nlohmann::json &ranks = manifest["pipeline"]["ranks"];
  nlohmann::json forward =
      chainRanks(static_cast<int>(ranks.size()), "gpipe", 1);
  for (size_t r = 0; r < ranks.size(); ++r) {
    nlohmann::json program = nlohmann::json::array();
    for (const nlohmann::json &ins : forward[r]["program"]) {
      program.push_back(ins);
      if (ins["op"] == "send" || ins["op"] == "loss")
        break;
    }
    ranks[r]["eval"] = {{"registers", forward[r]["registers"]},
                        {"program", program}};
  }
}

/// Runs `body(rank, bundle, pipeline)` on every rank of the pipeline
/// bundle in `dir`, each on its own thread over the threads transport
/// (rank r's bundle opened with pd_bundle_open_rank); a rank whose body
/// fails aborts its transport, so the others stop waiting. Returns each
/// rank's error ("" when its body returned "").
inline std::vector<std::string> onEveryRank(
    const std::string &dir, int ranks,
    const std::function<std::string(int, pd_bundle *, pd_rank *)> &body) {
  std::vector<pd_transport *> transports(ranks);
  if (pd_transport_create_threads(ranks, transports.data()) != PD_OK)
    return std::vector<std::string>(ranks, pd_last_error());
  std::vector<std::string> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      pd_bundle *bundle = nullptr;
      pd_rank *pipeline = nullptr;
      if (pd_bundle_open_rank(dir.c_str(), r, &bundle) != PD_OK ||
          pd_rank_create(bundle, r, transports[r], &pipeline) != PD_OK)
        errors[r] = pd_last_error();
      else
        errors[r] = body(r, bundle, pipeline);
      if (!errors[r].empty())
        pd_transport_abort(transports[r], errors[r].c_str());
      pd_bundle_close(bundle);
    });
  for (auto &thread : threads)
    thread.join();
  for (pd_transport *t : transports)
    pd_transport_destroy(t);
  return errors;
}

/// The pipeline bundle.json of the chain of K stages.
inline nlohmann::json chainPipelineManifest(int stages,
                                            const std::string &kind,
                                            std::string &weightsBin) {
  nlohmann::json m = chainBase(chainWeights(stages, weightsBin));
  m["functions"] = chainStageFunctions(stages);
  m["pipeline"] = {
      {"schedule",
       {{"kind", kind}, {"stages", stages},
        {"microbatches", kChainMicrobatches}, {"chunks", 1}}},
      {"loss", "mse"},
      {"labels", "y"},
      {"inputs", {"x"}},
      {"microbatch_size", 2},
      {"batch_size", 2 * kChainMicrobatches},
      {"optimizer", {{"kind", "momentum"}, {"lr", 0.1}, {"momentum", 0.9}}},
      {"ranks", chainRanks(stages, kind)}};
  return m;
}

/// The single-rank training bundle.json of the same chain.
inline nlohmann::json chainTrainingManifest(int stages,
                                            std::string &weightsBin) {
  nlohmann::json m = chainBase(chainWeights(stages, weightsBin));
  std::vector<std::string> names = chainWeightNames(stages);
  auto shape = [&](size_t i) {
    return i + 1 == names.size() ? std::vector<int64_t>{2}
                                 : std::vector<int64_t>{2, 2};
  };
  nlohmann::json train = {chainBuffer("x", "input", {2, 2}),
                          chainBuffer("y", "input", {2})};
  nlohmann::json update = nlohmann::json::array();
  for (size_t i = 0; i < names.size(); ++i)
    train.push_back(chainBuffer(names[i], "weight", shape(i)));
  for (size_t i = 0; i < names.size(); ++i)
    train.push_back(chainBuffer("grad:" + names[i], "grad", shape(i)));
  train.push_back(chainBuffer("loss", "output", {}));
  for (size_t i = 0; i < names.size(); ++i)
    train.push_back(chainBuffer("grad:" + names[i] + "'", "output", shape(i),
                                "grad:" + names[i]));
  for (const char *role : {"weight", "grad", "state"})
    for (size_t i = 0; i < names.size(); ++i) {
      std::string prefix = std::string(role) == "grad"    ? "grad:"
                           : std::string(role) == "state" ? "momentum_buffer:"
                                                          : "";
      update.push_back(chainBuffer(prefix + names[i], role, shape(i)));
    }
  for (const char *prefix : {"", "momentum_buffer:"})
    for (size_t i = 0; i < names.size(); ++i)
      update.push_back(chainBuffer(prefix + names[i] + "'", "output",
                                   shape(i), prefix + names[i]));
  std::string k = std::to_string(stages);
  m["functions"] = {{{"name", "train_microbatch"},
                     {"symbol", "pipedream_chain_train" + k},
                     {"kind", "train_microbatch"},
                     {"buffers", train}},
                    {{"name", "update"},
                     {"symbol", "pipedream_chain_update" + k},
                     {"kind", "update"},
                     {"buffers", update}}};
  m["training"] = {{"loss", "mse"},
                   {"labels", "y"},
                   {"microbatches", kChainMicrobatches},
                   {"microbatch_size", 2},
                   {"batch_size", 2 * kChainMicrobatches},
                   {"inputs", {"x"}},
                   {"step_function", "train_microbatch"},
                   {"update_function", "update"}};
  return m;
}

} // namespace test
} // namespace pipedream

#endif // PIPEDREAM_RUNTIME_TEST_PIPELINEUTIL_H
