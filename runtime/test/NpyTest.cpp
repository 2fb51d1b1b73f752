//===- NpyTest.cpp - .npy / .npz reading and writing ----------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// Round trips through our own reader and writer, malformed files, and files
// exchanged with numpy itself (written by np.save / np.savez /
// np.savez_compressed at test time, and ours checked by np.load); the numpy
// tests skip when PIPEDREAM_TEST_PYTHON has no numpy.
//
//===----------------------------------------------------------------------===//

#include "pipedream/npy.h"

#include "TestUtil.h"

#include <gtest/gtest.h>
#include <zip.h>

#include <cstring>

using namespace pipedream::npy;
using pipedream::test::haveNumpy;
using pipedream::test::readFile;
using pipedream::test::runPython;
using pipedream::test::TempDir;
using pipedream::test::writeFile;

namespace {

/// An array whose element i holds the bytes of `i % 251` in its dtype.
Array iota(pd_dtype dtype, std::vector<int64_t> shape) {
  Array array;
  array.dtype = dtype;
  array.shape = std::move(shape);
  size_t n = array.numElements();
  array.data.resize(array.numBytes());
  for (size_t i = 0; i < n; ++i) {
    unsigned v = static_cast<unsigned>(i % 251);
    unsigned char *p = &array.data[i * pd_dtype_size(dtype)];
    switch (dtype) {
    case PD_DTYPE_F32: {
      float f = static_cast<float>(v) * 0.5f;
      std::memcpy(p, &f, 4);
      break;
    }
    case PD_DTYPE_F64: {
      double d = static_cast<double>(v) * 0.25;
      std::memcpy(p, &d, 8);
      break;
    }
    case PD_DTYPE_F16: {
      // Small integers are exact in half precision: v as an f16 bit pattern.
      uint16_t h = 0;
      if (v) {
        int e = 31 - __builtin_clz(v);
        h = static_cast<uint16_t>(((e + 15) << 10) |
                                  (((v << (10 - e)) & 0x3ff)));
      }
      std::memcpy(p, &h, 2);
      break;
    }
    case PD_DTYPE_I64: {
      int64_t x = static_cast<int64_t>(v) - 100;
      std::memcpy(p, &x, 8);
      break;
    }
    case PD_DTYPE_I32: {
      int32_t x = static_cast<int32_t>(v) - 100;
      std::memcpy(p, &x, 4);
      break;
    }
    case PD_DTYPE_I8:
      *p = static_cast<unsigned char>(static_cast<int8_t>(v % 100 - 50));
      break;
    case PD_DTYPE_I1:
      *p = static_cast<unsigned char>(v % 3 == 0);
      break;
    case PD_DTYPE_BF16: {
      // Bit patterns, as numpy sees them (uint16).
      uint16_t bits = static_cast<uint16_t>(v);
      std::memcpy(p, &bits, 2);
      break;
    }
    case PD_DTYPE_U8:
    case PD_DTYPE_U16:
    case PD_DTYPE_U32:
    case PD_DTYPE_U64:
    case PD_DTYPE_I16:
    case PD_DTYPE_MAX_ENUM_:
      // The low byte (the wider unsigned types: small values).
      *p = static_cast<unsigned char>(v);
      break;
    }
  }
  return array;
}

/// Python expression for the same values as iota(), for numpy's side.
std::string pythonIota(const char *numpyDtype, const char *shape) {
  std::string n = "int(np.prod(" + std::string(shape) + "))";
  std::string v = "(np.arange(" + n + ") % 251)";
  std::string dt = numpyDtype;
  std::string expr;
  if (dt == "float32")
    expr = v + " * 0.5";
  else if (dt == "float64")
    expr = v + " * 0.25";
  else if (dt == "float16")
    expr = v;
  else if (dt == "int64" || dt == "int32")
    expr = v + " - 100";
  else if (dt == "int8")
    expr = v + " % 100 - 50";
  else if (dt == "bool_")
    expr = v + " % 3 == 0";
  else
    expr = v;
  return "(" + expr + ").astype(np." + dt + ").reshape(" + shape + ")";
}

struct DtypeCase {
  pd_dtype dtype;
  const char *numpy;
  const char *descr;
};

const DtypeCase kDtypes[] = {
    {PD_DTYPE_F32, "float32", "<f4"}, {PD_DTYPE_F64, "float64", "<f8"},
    {PD_DTYPE_F16, "float16", "<f2"}, {PD_DTYPE_I64, "int64", "<i8"},
    {PD_DTYPE_I32, "int32", "<i4"},   {PD_DTYPE_I8, "int8", "|i1"},
    {PD_DTYPE_U8, "uint8", "|u1"},    {PD_DTYPE_I1, "bool_", "|b1"},
    // numpy has no bfloat16: bf16 travels as uint16 bit patterns.
    {PD_DTYPE_BF16, "uint16", "<u2"},
};
constexpr size_t kNumDtypes = sizeof(kDtypes) / sizeof(kDtypes[0]);

void expectSame(const Array &a, const Array &b) {
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_TRUE(a.data == b.data) << describe(a.dtype, a.shape);
}

std::string npyBytes(const std::string &header, const std::string &data,
                     unsigned major = 1) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  size_t length = header.size();
  out += static_cast<char>(length & 0xff);
  out += static_cast<char>((length >> 8) & 0xff);
  if (major >= 2) {
    out += static_cast<char>((length >> 16) & 0xff);
    out += static_cast<char>((length >> 24) & 0xff);
  }
  return out + header + data;
}

std::string parseError(const std::string &bytes) {
  Array array;
  std::string error;
  EXPECT_FALSE(parseNpy(bytes.data(), bytes.size(), array, error));
  return error;
}

TEST(Npy, RoundTripsEveryDtypeAndShape) {
  const std::vector<std::vector<int64_t>> shapes = {
      {}, {1}, {7}, {2, 3}, {2, 0, 4}, {3, 1, 4, 5}};
  for (const DtypeCase &c : kDtypes)
    for (const auto &shape : shapes) {
      Array array = iota(c.dtype, shape), back;
      std::vector<unsigned char> bytes;
      std::string error;
      ASSERT_TRUE(serializeNpy(array, bytes, error)) << error;
      // Format 1.0, data 64-byte aligned, numpy's header spelling.
      EXPECT_EQ(bytes[6], 1);
      size_t headerLength = bytes[8] | (bytes[9] << 8);
      EXPECT_EQ((10 + headerLength) % 64, 0u);
      std::string header(bytes.begin() + 10,
                         bytes.begin() + 10 + headerLength);
      EXPECT_EQ(header.rfind(std::string("{'descr': '") + c.descr +
                                 "', 'fortran_order': False, 'shape': (",
                             0),
                0u)
          << header;
      EXPECT_EQ(header.back(), '\n');
      ASSERT_TRUE(parseNpy(bytes.data(), bytes.size(), back, error)) << error;
      expectSame(array, back);
    }
}

TEST(Npy, ShapeSpelling) {
  std::vector<unsigned char> bytes;
  std::string error;
  auto header = [&](std::vector<int64_t> shape) {
    EXPECT_TRUE(serializeNpy(iota(PD_DTYPE_F32, shape), bytes, error));
    std::string text(bytes.begin() + 10, bytes.begin() + 10 +
                                             (bytes[8] | (bytes[9] << 8)));
    return text.substr(0, text.find('}') + 1);
  };
  EXPECT_EQ(header({}),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (), }");
  EXPECT_EQ(header({5}),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }");
  EXPECT_EQ(header({2, 3}),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
}

TEST(Npy, LargeHeaderUsesVersion2) {
  Array array = iota(PD_DTYPE_U8, std::vector<int64_t>(22000, 1));
  std::vector<unsigned char> bytes;
  std::string error;
  ASSERT_TRUE(serializeNpy(array, bytes, error)) << error;
  EXPECT_EQ(bytes[6], 2);
  size_t headerLength =
      bytes[8] | (bytes[9] << 8) | (bytes[10] << 16) | (bytes[11] << 24);
  EXPECT_GT(headerLength, 65535u);
  EXPECT_EQ((12 + headerLength) % 64, 0u);
  Array back;
  ASSERT_TRUE(parseNpy(bytes.data(), bytes.size(), back, error)) << error;
  expectSame(array, back);
}

TEST(Npy, ReadsVersion3AndOtherSpellings) {
  float data[2] = {1.5f, -2.f};
  std::string raw(reinterpret_cast<char *>(data), 8);
  Array array;
  std::string error;
  std::string v3 =
      npyBytes("{\"descr\": \"<f4\", \"fortran_order\": False, "
               "\"shape\": (2L,)}\n",
               raw, 3);
  ASSERT_TRUE(parseNpy(v3.data(), v3.size(), array, error)) << error;
  EXPECT_EQ(array.dtype, PD_DTYPE_F32);
  EXPECT_EQ(array.shape, std::vector<int64_t>{2});
  // Native byte order ('=') and no order character mean little-endian here.
  std::string native = npyBytes(
      "{'shape': (2,), 'fortran_order': False, 'descr': '=f4'}", raw);
  ASSERT_TRUE(parseNpy(native.data(), native.size(), array, error)) << error;
  // A big-endian single byte type has no byte order.
  std::string bigByte =
      npyBytes("{'descr': '>u1', 'fortran_order': False, 'shape': (8,), }",
               raw);
  ASSERT_TRUE(parseNpy(bigByte.data(), bigByte.size(), array, error))
      << error;
  EXPECT_EQ(array.dtype, PD_DTYPE_U8);
}

TEST(Npy, FortranOrderIsTransposedToC) {
  // The 2x3 matrix [[0,1,2],[3,4,5]] in column-major order.
  int32_t columnMajor[6] = {0, 3, 1, 4, 2, 5};
  std::string bytes = npyBytes(
      "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }",
      std::string(reinterpret_cast<char *>(columnMajor), 24));
  Array array;
  std::string error;
  ASSERT_TRUE(parseNpy(bytes.data(), bytes.size(), array, error)) << error;
  int32_t rowMajor[6];
  std::memcpy(rowMajor, array.data.data(), 24);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(rowMajor[i], i);
}

TEST(Npy, MalformedFiles) {
  const std::string ok =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string data(8, '\0');
  EXPECT_EQ(parseError("PK\x03\x04 not npy"), "not an .npy file (bad magic)");
  EXPECT_EQ(parseError(""), "not an .npy file (bad magic)");
  EXPECT_EQ(parseError(npyBytes(ok, data, 4)),
            "unsupported .npy format version 4.0 (supported: 1.0, 2.0, 3.0)");
  EXPECT_EQ(parseError(npyBytes(ok, "").substr(0, 30)),
            "truncated .npy header (" + std::to_string(ok.size()) +
                " bytes announced, 20 present)");
  EXPECT_EQ(parseError(npyBytes(ok, data.substr(0, 5))),
            "truncated data: 5 bytes, f32[2] needs 8");
  EXPECT_EQ(parseError(npyBytes(ok, data + "xx")),
            "unexpected data size: 10 bytes, f32[2] needs 8");
  EXPECT_EQ(
      parseError(npyBytes(
          "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data)),
      "big-endian dtype '>f4' is not supported (convert with .astype('<f4'))");
  EXPECT_EQ(
      parseError(npyBytes(
          "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", data)),
      "object arrays ('|O') are not supported");
  EXPECT_EQ(
      parseError(npyBytes(
          "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", data)),
      "numpy dtype '<c8' has no pipedream equivalent (supported: <f4 <f8 <f2 "
      "<i8 <i4 |i1 |u1 |b1 <i2 <u4 <u8, and <u2 for uint16 or bf16 bit "
      "patterns)");
  EXPECT_EQ(
      parseError(npyBytes(
          "{'descr': '>u2', 'fortran_order': False, 'shape': (2,), }",
          data.substr(0, 4))),
      "big-endian dtype '>u2' is not supported (convert with .astype('<u2'))");
  EXPECT_EQ(parseError(npyBytes("{'descr': [('a', '<f4')], 'fortran_order': "
                                "False, 'shape': (2,), }",
                                data)),
            "bad .npy header: structured dtypes are not supported");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'shape': (2,), }", data)),
            "bad .npy header: the header needs 'descr', 'fortran_order' and "
            "'shape'");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'fortran_order': False, "
                                "'shape': (2,), 'extra': 1}",
                                data)),
            "bad .npy header: unexpected key 'extra'");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'fortran_order': False, "
                                "'shape': (-2,), }",
                                data)),
            "bad .npy header: 'shape' is not a tuple of non-negative integers");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'fortran_order': 0, "
                                "'shape': (2,), }",
                                data)),
            "bad .npy header: 'fortran_order' is not True or False");
  EXPECT_EQ(parseError(npyBytes("['descr']", data)),
            "bad .npy header: expected '{'");
  EXPECT_EQ(parseError(npyBytes("{'descr': '<f4', 'fortran_order': False, "
                                "'shape': (99999999999, 99999999999, "
                                "99999999999), }",
                                data)),
            "array f32[99999999999x99999999999x99999999999] is too large");
}

TEST(Npy, Bf16IsUint16BitPatterns) {
  std::string descr;
  ASSERT_TRUE(dtypeToDescr(PD_DTYPE_BF16, descr));
  EXPECT_EQ(descr, "<u2");
  pd_dtype dtype = PD_DTYPE_F32;
  std::string error;
  ASSERT_TRUE(dtypeFromDescr("<u2", dtype, error)) << error;
  EXPECT_EQ(dtype, PD_DTYPE_BF16);
  // 1.0 and -2.5 in bf16: the bits are kept as they are.
  const std::string bytes = npyBytes(
      "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }",
      std::string("\x80\x3f\x20\xc0", 4));
  Array array;
  ASSERT_TRUE(parseNpy(bytes.data(), bytes.size(), array, error)) << error;
  EXPECT_EQ(array.dtype, PD_DTYPE_BF16);
  EXPECT_EQ(array.data,
            (std::vector<unsigned char>{0x80, 0x3f, 0x20, 0xc0}));
}

TEST(Npy, DataSizeMustMatchOnWrite) {
  Array array = iota(PD_DTYPE_F32, {2, 2});
  array.data.pop_back();
  std::vector<unsigned char> bytes;
  std::string error;
  EXPECT_FALSE(serializeNpy(array, bytes, error));
  EXPECT_EQ(error, "array f32[2x2] needs 16 bytes of data, has 15");
}

TEST(Npy, Files) {
  TempDir dir;
  Array array = iota(PD_DTYPE_I64, {3, 2}), back;
  std::string error;
  ASSERT_TRUE(writeNpy(dir.file("a.npy"), array, error)) << error;
  ASSERT_TRUE(readNpy(dir.file("a.npy"), back, error)) << error;
  expectSame(array, back);
  EXPECT_FALSE(readNpy(dir.file("missing.npy"), back, error));
  EXPECT_EQ(error,
            dir.file("missing.npy") + ": cannot open: No such file or directory");
  writeFile(dir.file("bad.npy"), "hello");
  EXPECT_FALSE(readNpy(dir.file("bad.npy"), back, error));
  EXPECT_EQ(error, dir.file("bad.npy") + ": not an .npy file (bad magic)");
  EXPECT_FALSE(writeNpy(dir.file("no/such/dir.npy"), array, error));
  EXPECT_EQ(error.rfind(dir.file("no/such/dir.npy") + ": cannot create: ", 0),
            0u);
}

TEST(Npz, RoundTripStoredAndDeflated) {
  TempDir dir;
  NamedArrays arrays;
  for (const DtypeCase &c : kDtypes)
    arrays.emplace_back(std::string("a_") + c.numpy, iota(c.dtype, {4, 33}));
  arrays.emplace_back("scalar", iota(PD_DTYPE_F64, {}));
  arrays.emplace_back("empty", iota(PD_DTYPE_F32, {0, 3}));
  arrays.emplace_back("nested/name.with.dots", iota(PD_DTYPE_I32, {2}));
  for (Compression compression : {Compression::Stored, Compression::Deflated}) {
    std::string path = dir.file("a.npz");
    std::string error;
    ASSERT_TRUE(writeNpz(path, arrays, compression, error)) << error;
    NamedArrays back;
    ASSERT_TRUE(readNpz(path, back, error)) << error;
    ASSERT_EQ(back.size(), arrays.size());
    for (size_t i = 0; i < arrays.size(); ++i) {
      EXPECT_EQ(back[i].first, arrays[i].first);
      expectSame(back[i].second, arrays[i].second);
    }
  }
}

TEST(Npz, EmptyArchive) {
  TempDir dir;
  std::string error;
  ASSERT_TRUE(writeNpz(dir.file("e.npz"), {}, Compression::Stored, error))
      << error;
  NamedArrays back;
  ASSERT_TRUE(readNpz(dir.file("e.npz"), back, error)) << error;
  EXPECT_TRUE(back.empty());
}

TEST(Npz, WriteErrors) {
  TempDir dir;
  std::string error;
  NamedArrays dup = {{"x", iota(PD_DTYPE_F32, {1})},
                     {"x", iota(PD_DTYPE_F32, {1})}};
  EXPECT_FALSE(writeNpz(dir.file("d.npz"), dup, Compression::Stored, error));
  EXPECT_EQ(error, dir.file("d.npz") + ": duplicate array 'x'");
  NamedArrays ok = {{"x", iota(PD_DTYPE_F32, {1})}};
  EXPECT_FALSE(
      writeNpz(dir.file("no/dir/o.npz"), ok, Compression::Stored, error));
  EXPECT_EQ(error.rfind(dir.file("no/dir/o.npz") + ": cannot ", 0), 0u)
      << error;
}

class NpzErrors : public ::testing::Test {
protected:
  std::string readError(const std::string &path) {
    NamedArrays arrays;
    std::string error;
    EXPECT_FALSE(readNpz(path, arrays, error));
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    return error;
  }

  /// A stored npz with one f32[64] array `x` whose data is all 1.0.
  std::string validNpz() {
    Array x;
    x.dtype = PD_DTYPE_F32;
    x.shape = {64};
    x.data.resize(256);
    float one = 1.f;
    for (size_t i = 0; i < 64; ++i)
      std::memcpy(&x.data[i * 4], &one, 4);
    std::string path = dir.file("valid.npz"), error;
    EXPECT_TRUE(writeNpz(path, {{"x", x}}, Compression::Stored, error));
    return readFile(path);
  }

  TempDir dir;
};

TEST_F(NpzErrors, Missing) {
  EXPECT_EQ(readError(dir.file("none.npz")),
            dir.file("none.npz") + ": cannot open: No such file or directory");
}

TEST_F(NpzErrors, Directory) {
  std::string message = readError(dir.path());
  EXPECT_EQ(message.rfind(dir.path() + ": cannot read: Is a directory", 0),
            0u)
      << message;
}

TEST_F(NpzErrors, Empty) {
  writeFile(dir.file("e.npz"), "");
  EXPECT_EQ(readError(dir.file("e.npz")),
            dir.file("e.npz") + ": not an .npz file (empty)");
}

TEST_F(NpzErrors, NotAZip) {
  writeFile(dir.file("t.npz"), "just some text, not a zip archive\n");
  EXPECT_EQ(readError(dir.file("t.npz")),
            dir.file("t.npz") +
                ": not a readable .npz (zip) file: Not a zip archive");
}

TEST_F(NpzErrors, NpyIsNotNpz) {
  std::string error;
  ASSERT_TRUE(writeNpy(dir.file("a.npy"), iota(PD_DTYPE_F32, {2}), error));
  EXPECT_EQ(readError(dir.file("a.npy")),
            dir.file("a.npy") +
                ": not a readable .npz (zip) file: Not a zip archive");
}

TEST_F(NpzErrors, Truncated) {
  std::string bytes = validNpz();
  writeFile(dir.file("cut.npz"), bytes.substr(0, bytes.size() / 2));
  std::string message = readError(dir.file("cut.npz"));
  EXPECT_EQ(message.rfind(dir.file("cut.npz") +
                              ": not a readable .npz (zip) file: ",
                          0),
            0u)
      << message;
}

TEST_F(NpzErrors, CorruptData) {
  std::string bytes = validNpz();
  // Flip one byte of the stored array data (the float 1.0 = 00 00 80 3f):
  // the CRC check must catch it.
  size_t at = bytes.find(std::string("\x00\x00\x80\x3f", 4));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 2] = '\x81';
  writeFile(dir.file("crc.npz"), bytes);
  std::string message = readError(dir.file("crc.npz"));
  EXPECT_EQ(message, dir.file("crc.npz") +
                         ": member 'x.npy': corrupt data: CRC error")
      << message;
}

TEST_F(NpzErrors, MembersThatAreNotArrays) {
  std::string path = dir.file("m.npz");
  int code = 0;
  zip_t *archive = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  ASSERT_NE(archive, nullptr);
  static const char text[] = "hello";
  zip_source_t *source = zip_source_buffer(archive, text, 5, 0);
  ASSERT_GE(zip_file_add(archive, "readme.txt", source, 0), 0);
  ASSERT_EQ(zip_close(archive), 0);
  EXPECT_EQ(readError(path), path + ": member 'readme.txt' is not an .npy array");

  archive = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  ASSERT_NE(archive, nullptr);
  source = zip_source_buffer(archive, text, 5, 0);
  ASSERT_GE(zip_file_add(archive, "x.npy", source, 0), 0);
  ASSERT_EQ(zip_close(archive), 0);
  EXPECT_EQ(readError(path),
            path + ": array 'x': not an .npy file (bad magic)");
}

//===----------------------------------------------------------------------===//
// Interoperability with numpy itself
//===----------------------------------------------------------------------===//

class NumpyInterop : public ::testing::Test {
protected:
  void SetUp() override {
    if (!haveNumpy())
      GTEST_SKIP() << PIPEDREAM_TEST_PYTHON << " has no numpy";
  }
  TempDir dir;
};

TEST_F(NumpyInterop, ReadsNpyOfEveryFormatVersion) {
  std::string code;
  for (const DtypeCase &c : kDtypes)
    for (const char *version : {"(1, 0)", "(2, 0)", "(3, 0)"}) {
      std::string file = dir.file(std::string(c.numpy) + "_v" + version[1] +
                                  ".npy");
      code += "with open('" + file + "', 'wb') as f:\n"
              "    np.lib.format.write_array(f, " +
              pythonIota(c.numpy, "(3, 5, 2)") + ", version=" + version +
              ")\n";
    }
  // np.save of a Fortran-ordered array keeps that order in the file.
  code += "np.save('" + dir.file("fortran.npy") + "', np.asfortranarray(" +
          pythonIota("int32", "(3, 5, 2)") + "))\n";
  ASSERT_TRUE(runPython(dir.path(), code));
  for (const DtypeCase &c : kDtypes)
    for (char version : {'1', '2', '3'}) {
      Array array;
      std::string error;
      ASSERT_TRUE(readNpy(dir.file(std::string(c.numpy) + "_v" + version +
                                   ".npy"),
                          array, error))
          << error;
      expectSame(array, iota(c.dtype, {3, 5, 2}));
    }
  Array fortran;
  std::string error;
  ASSERT_TRUE(readNpy(dir.file("fortran.npy"), fortran, error)) << error;
  expectSame(fortran, iota(PD_DTYPE_I32, {3, 5, 2}));
}

TEST_F(NumpyInterop, ReadsSavezAndSavezCompressed) {
  std::string arrays;
  for (const DtypeCase &c : kDtypes)
    arrays += std::string(c.numpy) + "=" + pythonIota(c.numpy, "(40, 7)") +
              ", ";
  arrays += "scalar=np.float64(3.25), empty=np.zeros((0, 2), np.float32)";
  ASSERT_TRUE(runPython(dir.path(),
                        "np.savez('" + dir.file("s.npz") + "', " + arrays +
                            ")\nnp.savez_compressed('" + dir.file("c.npz") +
                            "', " + arrays + ")\n"));
  for (const char *file : {"s.npz", "c.npz"}) {
    NamedArrays read;
    std::string error;
    ASSERT_TRUE(readNpz(dir.file(file), read, error)) << error;
    ASSERT_EQ(read.size(), kNumDtypes + 2) << file;
    for (size_t i = 0; i < kNumDtypes; ++i) {
      EXPECT_EQ(read[i].first, kDtypes[i].numpy);
      expectSame(read[i].second, iota(kDtypes[i].dtype, {40, 7}));
    }
    EXPECT_EQ(read[kNumDtypes].first, "scalar");
    EXPECT_TRUE(read[kNumDtypes].second.shape.empty());
    double scalar;
    std::memcpy(&scalar, read[kNumDtypes].second.data.data(), 8);
    EXPECT_EQ(scalar, 3.25);
    EXPECT_EQ(read[kNumDtypes + 1].second.shape,
              (std::vector<int64_t>{0, 2}));
  }
}

TEST_F(NumpyInterop, NumpyReadsWhatWeWrite) {
  NamedArrays arrays;
  std::string checks;
  for (const DtypeCase &c : kDtypes) {
    arrays.emplace_back(c.numpy, iota(c.dtype, {6, 11}));
    checks += "assert a['" + std::string(c.numpy) +
              "'].dtype == np.dtype('" + c.descr + "')\n"
              "assert np.array_equal(a['" + c.numpy + "'], " +
              pythonIota(c.numpy, "(6, 11)") + ")\n";
  }
  std::string error;
  ASSERT_TRUE(writeNpz(dir.file("s.npz"), arrays, Compression::Stored, error))
      << error;
  ASSERT_TRUE(
      writeNpz(dir.file("c.npz"), arrays, Compression::Deflated, error))
      << error;
  ASSERT_TRUE(writeNpy(dir.file("one.npy"), iota(PD_DTYPE_F32, {2, 3}), error))
      << error;
  ASSERT_TRUE(runPython(
      dir.path(),
      "import zipfile\n"
      "for name in sys.argv[1:3]:\n"
      "    a = np.load(name)\n"
      "    assert sorted(a.files) == sorted([" +
          [&] {
            std::string list;
            for (const DtypeCase &c : kDtypes)
              list += std::string("'") + c.numpy + "', ";
            return list;
          }() +
          "]), a.files\n" +
          [&] {
            // Indent the per-array checks into the loop body.
            std::string indented, line;
            for (char ch : checks) {
              line += ch;
              if (ch == '\n') {
                indented += "    " + line;
                line.clear();
              }
            }
            return indented;
          }() +
          "methods = {i.compress_type for i in "
          "zipfile.ZipFile(sys.argv[1]).infolist()}\n"
          "assert methods == {zipfile.ZIP_STORED}, methods\n"
          "methods = {i.compress_type for i in "
          "zipfile.ZipFile(sys.argv[2]).infolist()}\n"
          "assert methods == {zipfile.ZIP_DEFLATED}, methods\n"
          "one = np.load(sys.argv[3])\n"
          "assert one.dtype == np.float32 and one.shape == (2, 3)\n"
          "assert np.array_equal(one, np.arange(6).reshape(2, 3) * 0.5)\n",
      dir.file("s.npz") + " " + dir.file("c.npz") + " " +
          dir.file("one.npy")));
}

} // namespace
