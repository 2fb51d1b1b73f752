//===- Hooks.cpp - test hooks of the training loops -----------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "Hooks.h"

#include <utility>

namespace pipedream {
namespace tooling {

namespace {
Hooks &installed() {
  static Hooks hooks;
  return hooks;
}
} // namespace

void setHooks(Hooks hooks) { installed() = std::move(hooks); }

const Hooks &hooks() { return installed(); }

} // namespace tooling
} // namespace pipedream
