//===- profile-json-fuzzer.cpp - libFuzzer target for profile JSON --------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Profile::parse (lib/Dialect/Pipe/Transforms/CostModel.cpp), the reader of
// pipedream-profile's output that --cost-model / --profile use, on
// arbitrary text: a one-line error naming the file, or a profile whose
// toJSON() parses back to the same entries.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"

#include "pipedream/Dialect/Pipe/Transforms/CostModel.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

using namespace pipedream;

namespace {

/// Parses `text`; a failure's whole diagnostic text (every line, so the
/// one-line check below sees what a user would) lands in `error`.
mlir::FailureOr<pipe::Profile>
parse(llvm::StringRef text, const std::string &source, std::string &error) {
  static mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  error.clear();
  mlir::ScopedDiagnosticHandler capture(&context, [&](mlir::Diagnostic &d) {
    error += d.str();
    return mlir::success();
  });
  return pipe::Profile::parse(text, source, [&] {
    return mlir::emitError(mlir::UnknownLoc::get(&context));
  });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string source = "fuzz/profile.json";
  std::string error;
  auto profile =
      parse(llvm::StringRef(reinterpret_cast<const char *>(data), size), source,
            error);
  if (failed(profile)) {
    fuzz::checkError(error, source + ": ");
    return 0;
  }
  for (const pipe::ProfileEntry &e : profile->entries)
    if (!(e.forward >= 0 && std::isfinite(e.forward)))
      fuzz::fatal("profile accepted with a bad forward time", e.op);
  auto again = parse(profile->toJSON(), source, error);
  if (failed(again))
    fuzz::fatal("Profile::parse rejects what toJSON wrote", error);
  if (again->entries.size() != profile->entries.size() ||
      again->device != profile->device)
    fuzz::fatal("round trip changed the profile", source);
  return 0;
}
