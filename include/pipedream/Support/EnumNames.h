//===- EnumNames.h - an enum's option names in one table --------*- C++ -*-===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The names an enum takes in options and files, written once as a table
// that both its parse and its stringify function read, so the two
// directions cannot disagree.
//
//===----------------------------------------------------------------------===//

#ifndef PIPEDREAM_SUPPORT_ENUMNAMES_H
#define PIPEDREAM_SUPPORT_ENUMNAMES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ErrorHandling.h"

#include <cstddef>
#include <optional>

namespace pipedream {

/// One enumerator and its name.
template <typename EnumT> struct EnumName {
  llvm::StringLiteral name;
  EnumT value;
};

/// The enumerator called `name` in `names` (exact match), or nullopt.
template <typename EnumT, size_t N>
std::optional<EnumT> parseEnumName(const EnumName<EnumT> (&names)[N],
                                   llvm::StringRef name) {
  for (const EnumName<EnumT> &entry : names)
    if (entry.name == name)
      return entry.value;
  return std::nullopt;
}

/// The name of `value` in `names`, or nullopt when the table lacks it.
template <typename EnumT, size_t N>
std::optional<llvm::StringRef>
stringifyEnumName(const EnumName<EnumT> (&names)[N], EnumT value) {
  for (const EnumName<EnumT> &entry : names)
    if (entry.value == value)
      return llvm::StringRef(entry.name);
  return std::nullopt;
}

/// The name of `value`, which every enumerator of the table's enum has.
template <typename EnumT, size_t N>
llvm::StringRef stringifyKnownEnumName(const EnumName<EnumT> (&names)[N],
                                       EnumT value) {
  if (std::optional<llvm::StringRef> name = stringifyEnumName(names, value))
    return *name;
  llvm_unreachable("an enumerator without a name in its table");
}

} // namespace pipedream

#endif // PIPEDREAM_SUPPORT_ENUMNAMES_H
