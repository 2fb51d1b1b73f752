//===- ManifestTest.cpp - bundle.json validation --------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"
#include "TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>

using json = nlohmann::json;
using pipedream::runtime::Error;
using pipedream::runtime::Manifest;
using pipedream::runtime::parseManifest;

namespace {

Manifest parse(const std::string &text) {
  return parseManifest(text, "b/bundle.json");
}

/// The message parseManifest throws for `text` ("" if it parses).
std::string errorOf(const std::string &text) {
  try {
    parse(text);
  } catch (const Error &e) {
    EXPECT_EQ(e.status, PD_ERROR_FORMAT);
    return e.what();
  }
  return "";
}

/// The message for the test manifest after `edit`.
std::string errorAfter(const std::function<void(json &)> &edit) {
  json manifest = json::parse(pipedream::test::testManifest());
  edit(manifest);
  return errorOf(manifest.dump());
}

TEST(Manifest, ParsesTheTestBundle) {
  Manifest m = parse(pipedream::test::testManifest());
  EXPECT_EQ(m.version, 2);
  EXPECT_EQ(m.model, "test.onnx");
  EXPECT_EQ(m.library, "program.so");
  EXPECT_EQ(m.weightsFile, "weights.bin");
  ASSERT_EQ(m.weights.size(), 2u);
  EXPECT_EQ(m.weights[1].name, "b");
  EXPECT_EQ(m.weights[1].offset, 64u);
  EXPECT_EQ(m.weights[1].type.numBytes, 12u);
  ASSERT_EQ(m.functions.size(), 3u);
  const auto &affine = m.functions[1];
  EXPECT_EQ(affine.name, "affine");
  EXPECT_EQ(affine.symbol, "pipedream_affine");
  EXPECT_EQ(affine.kind, "inference");
  ASSERT_EQ(affine.buffers.size(), 5u);
  EXPECT_EQ(affine.buffers[2].role, PD_ROLE_WEIGHT);
  EXPECT_EQ(affine.buffers[2].weightIndex, 1u);
  EXPECT_EQ(affine.buffers[4].type.dtype, PD_DTYPE_I1);
  EXPECT_TRUE(affine.buffers[4].type.shape.empty());
  EXPECT_EQ(affine.buffers[4].type.numElements, 1u);
  EXPECT_EQ(affine.buffers[4].type.numBytes, 1u);
}

TEST(Manifest, IgnoresUnknownKeysAndAcceptsOptionalOnes) {
  json manifest = json::parse(pipedream::test::testManifest());
  manifest["report"] = "report.json";
  manifest["functions"][0]["stage"] = 3;
  manifest.erase("model");
  Manifest m = parse(manifest.dump());
  EXPECT_EQ(m.model, "");
}

TEST(Manifest, NoWeightsNeedsNoWeightsFile) {
  json manifest = json::parse(pipedream::test::testManifest());
  manifest.erase("weights");
  manifest.erase("weights_file");
  manifest["functions"] = json::array({manifest["functions"][2]});
  Manifest m = parse(manifest.dump());
  EXPECT_TRUE(m.weights.empty());
  EXPECT_EQ(m.weightsFile, "");
}

TEST(Manifest, ZeroSizedAndEveryDtype) {
  json manifest = json::parse(pipedream::test::testManifest());
  json &buffers = manifest["functions"][2]["buffers"];
  const char *dtypes[] = {"f32", "f64", "f16", "bf16", "i64",
                          "i32", "i8",  "i1",  "u8"};
  size_t sizes[] = {4, 8, 2, 2, 8, 4, 1, 1, 1};
  for (const char *dtype : dtypes)
    buffers.push_back({{"name", std::string("t_") + dtype},
                       {"role", "output"},
                       {"dtype", dtype},
                       {"shape", {3, 5}}});
  buffers.push_back(
      {{"name", "empty"}, {"role", "output"}, {"dtype", "f32"}, {"shape", {4, 0}}});
  Manifest m = parse(manifest.dump());
  const auto &parsed = m.functions[2].buffers;
  for (size_t i = 0; i < 9; ++i)
    EXPECT_EQ(parsed[2 + i].type.numBytes, 15 * sizes[i]) << dtypes[i];
  EXPECT_EQ(parsed.back().type.numElements, 0u);
  EXPECT_EQ(parsed.back().type.numBytes, 0u);
}

struct BadCase {
  const char *label;
  std::function<void(json &)> edit;
  const char *message;
};

/// Names the case in gtest output (instead of a byte dump).
void PrintTo(const BadCase &c, std::ostream *os) { *os << c.label; }

class ManifestErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(ManifestErrors, NamesTheField) {
  std::string message = errorAfter(GetParam().edit);
  EXPECT_NE(message.find(GetParam().message), std::string::npos)
      << "got: " << message;
  EXPECT_EQ(message.rfind("b/bundle.json: ", 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

const BadCase kBadCases[] = {
    {"RootNotObject", [](json &m) { m = json::array(); },
     "b/bundle.json: expected an object, got an array"},
    {"MissingFormat", [](json &m) { m.erase("format"); },
     "missing required field 'format'"},
    {"WrongFormat", [](json &m) { m["format"] = "onnx"; },
     "format: expected \"pipedream-bundle\", got \"onnx\""},
    {"FormatNotString", [](json &m) { m["format"] = 3; },
     "format: expected a string, got an integer 3"},
    {"FutureVersion", [](json &m) { m["version"] = 4; },
     "version: unsupported bundle version 4 (this runtime reads versions 2 "
     "to 3)"},
    {"WeightFileNeedsVersion3",
     [](json &m) { m["weights"][0]["file"] = "weights.rank0.bin"; },
     "weights[0].file: a weight's 'file' needs bundle version 3 (the bundle "
     "says 2)"},
    {"WeightFileEscapes",
     [](json &m) {
       m["version"] = 3;
       m["weights"][0]["file"] = "../weights.bin";
     },
     "weights[0].file"},
    {"OldVersion", [](json &m) { m["version"] = 1; },
     "version: bundle version 1 was written by an older pipedream-compile, "
     "whose code does not check indices at run time (this runtime reads "
     "versions 2 to 3): recompile the model with pipedream-compile"},
    {"VersionString", [](json &m) { m["version"] = "2"; },
     "version: unsupported bundle version \"2\""},
    {"MissingVersion", [](json &m) { m.erase("version"); },
     "missing required field 'version'"},
    {"ModelNotString", [](json &m) { m["model"] = json::array(); },
     "model: expected a string, got an array"},
    {"MissingLibrary", [](json &m) { m.erase("library"); },
     "missing required field 'library'"},
    {"EmptyLibrary", [](json &m) { m["library"] = ""; },
     "library: must not be empty"},
    {"AbsoluteLibrary", [](json &m) { m["library"] = "/usr/lib/x.so"; },
     "library: '/usr/lib/x.so' must be relative to the bundle directory"},
    {"EscapingLibrary", [](json &m) { m["library"] = "sub/../../x.so"; },
     "library: 'sub/../../x.so' must stay inside the bundle directory"},
    {"AbsoluteWeightsFile", [](json &m) { m["weights_file"] = "/w.bin"; },
     "weights_file: '/w.bin' must be relative"},
    {"MissingWeightsFile", [](json &m) { m.erase("weights_file"); },
     "missing required field 'weights_file' (the bundle has 2 weights)"},
    {"WeightsNotArray", [](json &m) { m["weights"] = json::object(); },
     "weights: expected an array, got an object"},
    {"WeightNotObject", [](json &m) { m["weights"][0] = 7; },
     "weights[0]: expected an object, got an integer"},
    {"WeightWithoutName", [](json &m) { m["weights"][1].erase("name"); },
     "weights[1]: missing required field 'name'"},
    {"DuplicateWeight", [](json &m) { m["weights"][1]["name"] = "w"; },
     "weights[1].name: duplicate weight 'w'"},
    {"UnknownDtype", [](json &m) { m["weights"][0]["dtype"] = "f33"; },
     "weights[0].dtype: unknown dtype 'f33' (expected one of f32 f64 f16 "
     "bf16 i64 i32 i16 i8 i1 u8 u16 u32 u64)"},
    {"ShapeNotArray", [](json &m) { m["weights"][0]["shape"] = "2x3"; },
     "weights[0].shape: expected an array, got a string"},
    {"NegativeExtent", [](json &m) { m["weights"][0]["shape"][1] = -3; },
     "weights[0].shape[1]: expected a non-negative integer, got -3"},
    {"FractionalExtent", [](json &m) { m["weights"][0]["shape"][0] = 1.5; },
     "weights[0].shape[0]: expected a non-negative integer, got 1.5"},
    {"TooManyElements",
     [](json &m) {
       m["weights"][0]["shape"] = {uint64_t(1) << 40, uint64_t(1) << 40};
     },
     "weights[0].shape: f32[1099511627776x1099511627776] has too many "
     "elements"},
    {"RankTooLarge",
     [](json &m) { m["weights"][0]["shape"] = std::vector<int>(33, 1); },
     "weights[0].shape: rank 33 exceeds the maximum of 32"},
    {"NegativeOffset", [](json &m) { m["weights"][1]["offset"] = -64; },
     "weights[1].offset: expected a non-negative integer, got -64"},
    {"UnalignedOffset", [](json &m) { m["weights"][1]["offset"] = 24; },
     "weights[1].offset: offset 24 of weight 'b' is not a multiple of 64"},
    {"WrongBytes", [](json &m) { m["weights"][0]["bytes"] = 20; },
     "weights[0].bytes: 20 bytes, but weight 'w' of type f32[2x3] needs 24"},
    {"MissingBytes", [](json &m) { m["weights"][0].erase("bytes"); },
     "weights[0]: missing required field 'bytes'"},
    {"MissingFunctions", [](json &m) { m.erase("functions"); },
     "missing required field 'functions'"},
    {"NoFunctions", [](json &m) { m["functions"] = json::array(); },
     "functions: the bundle has no functions"},
    {"EmptyFunctionName", [](json &m) { m["functions"][0]["name"] = ""; },
     "functions[0].name: must not be empty"},
    {"DuplicateFunction",
     [](json &m) { m["functions"][2]["name"] = "main"; },
     "functions[2].name: duplicate function 'main'"},
    {"MissingSymbol", [](json &m) { m["functions"][1].erase("symbol"); },
     "functions[1]: missing required field 'symbol'"},
    {"SymbolNotIdentifier",
     [](json &m) { m["functions"][0]["symbol"] = "pipedream-main"; },
     "functions[0].symbol: 'pipedream-main' is not a C identifier"},
    {"DuplicateSymbol",
     [](json &m) { m["functions"][1]["symbol"] = "pipedream_main"; },
     "functions[1].symbol: symbol 'pipedream_main' is used by two functions"},
    {"MissingKind", [](json &m) { m["functions"][0].erase("kind"); },
     "functions[0]: missing required field 'kind'"},
    {"MissingBuffers", [](json &m) { m["functions"][0].erase("buffers"); },
     "functions[0]: missing required field 'buffers'"},
    {"UnknownRole",
     [](json &m) { m["functions"][0]["buffers"][0]["role"] = "stash"; },
     "functions[0].buffers[0].role: unsupported role 'stash' (this runtime "
     "supports input, output, weight, grad, state)"},
    {"DuplicateBuffer",
     [](json &m) { m["functions"][0]["buffers"][2]["name"] = "x"; },
     "functions[0].buffers[2].name: duplicate buffer 'x' in function 'main'"},
    {"BufferDtype",
     [](json &m) { m["functions"][2]["buffers"][1]["dtype"] = "int64"; },
     "functions[2].buffers[1].dtype: unknown dtype 'int64'"},
    {"BufferShape",
     [](json &m) { m["functions"][2]["buffers"][1].erase("shape"); },
     "functions[2].buffers[1]: missing required field 'shape'"},
    {"UnknownWeight",
     [](json &m) { m["functions"][0]["buffers"][1]["name"] = "fc.weight"; },
     "functions[0].buffers[1].name: weight buffer 'fc.weight' names no "
     "entry of 'weights'"},
    {"WeightTypeMismatch",
     [](json &m) { m["functions"][1]["buffers"][2]["shape"] = {1, 3}; },
     "functions[1].buffers[2]: weight buffer 'b' is f32[1x3] but the weight "
     "is f32[3]"},
    {"DataIndexChecksNotArray", [](json &m) { m["data_index_checks"] = 3; },
     "data_index_checks: expected an array, got an integer"},
    {"DataIndexCheckEmptyRange",
     [](json &m) {
       m["data_index_checks"] = {{{"input", "idx"}, {"lower", 5},
                                  {"upper", 5}, {"node", "/g"},
                                  {"op", "Gather"}}};
     },
     "data_index_checks[0]: empty range [5, 5)"},
    {"DataIndexCheckFloatBound",
     [](json &m) {
       m["data_index_checks"] = {{{"input", "idx"}, {"lower", -1.5},
                                  {"upper", 5}, {"node", "/g"},
                                  {"op", "Gather"}}};
     },
     "data_index_checks[0].lower: expected an integer, got -1.5"},
    {"DataIndexCheckHugeBound",
     [](json &m) {
       m["data_index_checks"] = {{{"input", "idx"}, {"lower", 0},
                                  {"upper", 18446744073709551615ull},
                                  {"node", "/g"}, {"op", "Gather"}}};
     },
     "data_index_checks[0].upper: expected an integer, got "
     "18446744073709551615"},
    {"DataIndexCheckNoInput",
     [](json &m) {
       m["data_index_checks"] = {
           {{"lower", 0}, {"upper", 5}, {"node", "/g"}, {"op", "Gather"}}};
     },
     "data_index_checks[0]: missing required field 'input'"},
};

INSTANTIATE_TEST_SUITE_P(
    All, ManifestErrors, ::testing::ValuesIn(kBadCases),
    [](const ::testing::TestParamInfo<BadCase> &info) {
      return std::string(info.param.label);
    });

TEST(Manifest, MalformedJsonSaysWhere) {
  std::string message = errorOf("{\"format\": \"pipedream-bundle\",\n  oops}");
  EXPECT_NE(message.find("b/bundle.json: malformed JSON: parse error at line "
                         "2, column 3"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("[json.exception"), std::string::npos) << message;
}

// nlohmann throws out_of_range, not parse_error, for a number too large
// for a double: still a format error naming the file (was "internal
// error: [json.exception.out_of_range.406]...", found by fuzzing).
TEST(Manifest, NumberOverflowIsMalformed) {
  std::string message =
      errorOf("{\"format\": \"pipedream-bundle\", \"version\": 1e999}");
  EXPECT_EQ(message.rfind("b/bundle.json: malformed JSON: number overflow "
                          "parsing '1e999'",
                          0),
            0u)
      << message;
}

TEST(Manifest, ParsesDataIndexChecks) {
  json manifest = json::parse(pipedream::test::testManifest());
  manifest["data_index_checks"] = {{{"input", "idx"},
                                    {"lower", -61},
                                    {"upper", 61},
                                    {"node", "/tok/Gather"},
                                    {"op", "Gather"}}};
  Manifest m = parse(manifest.dump());
  ASSERT_EQ(m.dataIndexChecks.size(), 1u);
  EXPECT_EQ(m.dataIndexChecks[0].input, "idx");
  EXPECT_EQ(m.dataIndexChecks[0].lower, -61);
  EXPECT_EQ(m.dataIndexChecks[0].upper, 61);
  EXPECT_EQ(m.dataIndexChecks[0].node, "/tok/Gather");
  EXPECT_EQ(m.dataIndexChecks[0].opType, "Gather");
}

TEST(Manifest, EmptyTextIsMalformed) {
  EXPECT_NE(errorOf("").find("malformed JSON"), std::string::npos);
}

} // namespace
