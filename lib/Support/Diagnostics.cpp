//===- Diagnostics.cpp - the first error as a one-line message ------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "pipedream/Support/Diagnostics.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace pipedream;

std::string pipedream::firstLine(const llvm::Twine &text) {
  std::string line = text.str();
  return llvm::StringRef(line).split('\n').first.str();
}

int pipedream::printError(const llvm::Twine &message) {
  llvm::errs() << "error: " << firstLine(message) << "\n";
  return 1;
}

InFlightDiagnostic pipedream::emitError(MLIRContext *context) {
  return mlir::emitError(UnknownLoc::get(context));
}

FirstErrorHandler::FirstErrorHandler(MLIRContext *context, Format format)
    : format(format), handler(context, [this](Diagnostic &diag) {
        if (diag.getSeverity() != DiagnosticSeverity::Error)
          return success();
        std::lock_guard<std::mutex> lock(mutex);
        if (captured)
          return success();
        captured = true;
        llvm::raw_string_ostream os(text);
        if (this->format == Format::WithLocation &&
            !isa<UnknownLoc>(diag.getLocation()))
          os << diag.getLocation() << ": ";
        os << diag.str();
        return success();
      }) {}

bool FirstErrorHandler::hasError() const {
  std::lock_guard<std::mutex> lock(mutex);
  return captured;
}

std::string FirstErrorHandler::orElse(const llvm::Twine &fallback) const {
  std::lock_guard<std::mutex> lock(mutex);
  return captured ? firstLine(text) : firstLine(fallback);
}

FirstErrorHandler::Format FirstErrorHandler::setFormat(Format newFormat) {
  std::lock_guard<std::mutex> lock(mutex);
  Format previous = format;
  format = newFormat;
  return previous;
}

void FirstErrorHandler::clear() {
  std::lock_guard<std::mutex> lock(mutex);
  captured = false;
  text.clear();
}
