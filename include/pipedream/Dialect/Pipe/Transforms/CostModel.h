//===- CostModel.h - per-op costs for the partitioner -----------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The cost model of `pipe-annotate-costs` (docs/Pipe.md, "Costs"): device
// descriptions, the analytical per-op model on `nn::CostOpInterface`, the
// JSON profile that overrides it, and the `pipe.cost` attribute that carries
// the result to `pipe-partition` and the report.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_DIALECT_PIPE_TRANSFORMS_COSTMODEL_H
#define PIPEDREAM_DIALECT_PIPE_TRANSFORMS_COSTMODEL_H

#include "pipedream/Dialect/Pipe/Transforms/PartitionSolver.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>
#include <vector>

namespace pipedream {
namespace pipe {

/// Name of the per-op cost attribute (a dictionary, see `OpCost`).
inline constexpr llvm::StringLiteral kCostAttrName = "pipe.cost";
/// Name of the module attribute describing the device the costs are for.
inline constexpr llvm::StringLiteral kDeviceAttrName = "pipe.device";

/// A device for the analytical model (roofline plus a fixed per-op cost).
struct DeviceModel {
  std::string name;
  /// FLOP/s of contractions (matmul, gemm, conv) on 16-bit, 32-bit and
  /// 64-bit floats; other ops use `vectorFlops`.
  double matrixFlops16 = 0, matrixFlops32 = 0, matrixFlops64 = 0;
  double vectorFlops = 0;
  /// Bytes per second of the memory and of the link between two ranks.
  double memoryBandwidth = 0, linkBandwidth = 0;
  /// Seconds per message and per op (kernel launch or loop entry).
  double linkLatency = 0, opOverhead = 0;

  /// `cpu` (one core of this machine's class: AVX-512 FMA at ~2.6 GHz)
  /// or `h200` (NVIDIA H200 SXM: TF32/BF16 tensor cores, HBM3e, NVLink).
  static std::optional<DeviceModel> lookup(llvm::StringRef name);
  /// Reads a device back from the module attribute `pipe.device`.
  static std::optional<DeviceModel> fromAttr(mlir::Attribute attr);
  mlir::DictionaryAttr toAttr(mlir::MLIRContext *context) const;
};

/// What the partitioner needs to know about one op. Times in seconds.
struct OpCost {
  double forward = 0, backwardInput = 0, backwardWeight = 0;
  /// Trainable (`nn.param` without `nn.frozen`) and frozen weight bytes the
  /// op reads, each weight counted at its first reader only.
  int64_t parameterBytes = 0, frozenBytes = 0;
  /// Bytes the backward needs kept from the forward, each value counted
  /// once (at its first keeper).
  int64_t activationBytes = 0;
  /// Bytes of the results (what goes downstream when a cut follows).
  int64_t outputBytes = 0;
  /// "analytical" or "profile".
  std::string source = "analytical";

  mlir::DictionaryAttr toAttr(mlir::MLIRContext *context) const;
  static std::optional<OpCost> fromAttr(mlir::Attribute attr);
};

/// One measured op of a profile.
struct ProfileEntry {
  std::string name; ///< Location name (ONNX node); empty: any op.
  std::string op;   ///< Op name, e.g. `nn.matmul`.
  std::string signature;
  double forward = 0;
  std::optional<double> backwardInput, backwardWeight;
};

/// A profile (JSON, docs/Pipe.md "Profiles"): measured op times that
/// override the analytical model.
struct Profile {
  std::string device;
  std::vector<ProfileEntry> entries;
  /// The measured link between two ranks (`"link"`, e.g. from
  /// `pipedream-run --measure-link`): seconds per message and bytes per
  /// second, replacing the device's where present.
  std::optional<double> linkLatency, linkBandwidth;
  /// Looks up by (name, op, signature), then by (op, signature).
  const ProfileEntry *lookup(mlir::Operation *op) const;

  /// Reads `path`; on failure reports one line through `emitError` (the
  /// message starts with `path`) and fails.
  static mlir::FailureOr<Profile>
  read(llvm::StringRef path,
       llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
  /// Parses profile JSON text; `source` (the file name) starts every error.
  static mlir::FailureOr<Profile>
  parse(llvm::StringRef text, llvm::StringRef source,
        llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
  /// Writes JSON (same format `read` accepts).
  std::string toJSON() const;

private:
  llvm::StringMap<size_t> byNameKey_, byOpKey_;
  void index();
};

/// The op's name: the NameLoc the importer gives every op (its ONNX node
/// name), or "" when it has none.
std::string getOpName(mlir::Operation *op);
/// Operand and result types, e.g. `2x8x32xf32,32x96xf32->2x8x96xf32`.
std::string getOpSignature(mlir::Operation *op);

/// Whether `op` gets a cost (and a stage): every op of a function body but
/// constants and the terminator.
bool isPlacedOp(mlir::Operation *op);

/// Computes every placed op's cost in `func` with the analytical model on
/// `device`, then replaces forward (and backward when measured) times with
/// `profile` entries where they exist.
llvm::DenseMap<mlir::Operation *, OpCost>
computeCosts(mlir::func::FuncOp func, const DeviceModel &device,
             const Profile *profile = nullptr);

/// The partition problem of `func`: its placed ops in body order (returned
/// in `nodes`), their `pipe.cost` (zero where missing; `missingCosts` counts
/// those) and the values between them. A returned value counts as read by
/// the last op.
partition::Graph buildPartitionGraph(mlir::func::FuncOp func,
                                     llvm::SmallVectorImpl<mlir::Operation *> &nodes,
                                     int64_t &missingCosts);

/// Parses a byte count with an optional suffix (K, M, G, T: powers of 1000;
/// KiB, MiB, GiB, TiB: of 1024; B). Returns nullopt when malformed.
std::optional<int64_t> parseByteSize(llvm::StringRef text);

} // namespace pipe
} // namespace pipedream

#endif // PIPEDREAM_DIALECT_PIPE_TRANSFORMS_COSTMODEL_H
