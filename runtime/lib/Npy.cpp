//===- Npy.cpp - .npy / .npz reading and writing --------------------------===//
//
// Part of the pipedream project.
//
//===----------------------------------------------------------------------===//
//
// The .npy format (numpy/lib/format.py): the magic "\x93NUMPY", a major and
// minor version byte, a little-endian header length (2 bytes in 1.0, 4 in
// 2.0 and 3.0), then a Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a newline, then the raw data. An .npz is a zip
// archive of NAME.npy members; libzip handles stored and deflated members
// and zip64 (numpy writes every member with zip64 extra fields).
//
//===----------------------------------------------------------------------===//

#include "pipedream/npy.h"

#include "Manifest.h"

#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

using pipedream::runtime::describeType;

namespace pipedream {
namespace npy {

namespace {

constexpr unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kMagicSize = sizeof(kMagic);
/// numpy aligns the data of .npy files to 64 bytes (ARRAY_ALIGN).
constexpr size_t kHeaderAlign = 64;

/// `text` for a one-line message: control and non-ASCII bytes as \xNN,
/// cut after 64 characters (names and dtypes come from the file).
std::string printable(const std::string &text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i == 64) {
      out += "...";
      break;
    }
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

/// Parses the Python dict literal of an .npy header: string keys, and
/// values that are strings, True/False or tuples of integers.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : text(text) {}

  bool parse(std::string &descr, bool &fortranOrder,
             std::vector<int64_t> &shape, std::string &error) {
    bool sawDescr = false, sawOrder = false, sawShape = false;
    skipSpace();
    if (!consume('{'))
      return fail("expected '{'", error);
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (!parseString(key))
        return fail("expected a quoted key", error);
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after '" + printable(key) + "'", error);
      skipSpace();
      if (key == "descr") {
        if (pos < text.size() && text[pos] == '[')
          return fail("structured dtypes are not supported", error);
        if (!parseString(descr))
          return fail("'descr' is not a string", error);
        sawDescr = true;
      } else if (key == "fortran_order") {
        if (text.compare(pos, 4, "True") == 0) {
          fortranOrder = true;
          pos += 4;
        } else if (text.compare(pos, 5, "False") == 0) {
          fortranOrder = false;
          pos += 5;
        } else {
          return fail("'fortran_order' is not True or False", error);
        }
        sawOrder = true;
      } else if (key == "shape") {
        if (!parseShape(shape))
          return fail("'shape' is not a tuple of non-negative integers",
                      error);
        sawShape = true;
      } else {
        return fail("unexpected key '" + printable(key) + "'", error);
      }
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return fail("expected ',' or '}'", error);
    }
    skipSpace();
    if (pos != text.size())
      return fail("trailing characters after the dict", error);
    if (!sawDescr || !sawOrder || !sawShape)
      return fail("the header needs 'descr', 'fortran_order' and 'shape'",
                  error);
    return true;
  }

private:
  bool fail(const std::string &what, std::string &error) {
    error = "bad .npy header: " + what;
    return false;
  }

  void skipSpace() {
    while (pos < text.size() &&
           (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' ||
            text[pos] == '\r'))
      ++pos;
  }

  bool consume(char c) {
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }

  bool parseString(std::string &out) {
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
      return false;
    char quote = text[pos++];
    out.clear();
    while (pos < text.size() && text[pos] != quote) {
      if (text[pos] == '\\' && pos + 1 < text.size())
        ++pos;
      out += text[pos++];
    }
    return consume(quote);
  }

  bool parseShape(std::vector<int64_t> &shape) {
    shape.clear();
    if (!consume('('))
      return false;
    while (true) {
      skipSpace();
      if (consume(')'))
        return true;
      if (pos >= text.size() || text[pos] < '0' || text[pos] > '9')
        return false;
      uint64_t value = 0;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        unsigned digit = static_cast<unsigned>(text[pos++] - '0');
        if (value > (static_cast<uint64_t>(
                         std::numeric_limits<int64_t>::max()) -
                     digit) /
                        10)
          return false;
        value = value * 10 + digit;
      }
      consume('L'); // Python 2 longs.
      shape.push_back(static_cast<int64_t>(value));
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume(')'))
        return true;
      return false;
    }
  }

  const std::string &text;
  size_t pos = 0;
};

/// Element count and byte size of a dtype/shape, false on overflow.
bool sizeOf(pd_dtype dtype, const std::vector<int64_t> &shape,
            size_t &elements, size_t &bytes) {
  elements = 1;
  for (int64_t extent : shape) {
    if (extent < 0)
      return false;
    uint64_t e = static_cast<uint64_t>(extent);
    if (e != 0 && elements > std::numeric_limits<size_t>::max() / e)
      return false;
    elements *= static_cast<size_t>(e);
  }
  size_t size = pd_dtype_size(dtype);
  if (size == 0 || elements > std::numeric_limits<size_t>::max() / size)
    return false;
  bytes = elements * size;
  return true;
}

/// Reorders Fortran-order data (first index fastest) into C order.
std::vector<unsigned char> fortranToC(const std::vector<unsigned char> &in,
                                      const std::vector<int64_t> &shape,
                                      size_t elementSize, size_t elements) {
  std::vector<unsigned char> out(in.size());
  size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0);
  // Fortran strides, in elements.
  std::vector<size_t> stride(rank, 1);
  for (size_t d = 1; d < rank; ++d)
    stride[d] = stride[d - 1] * static_cast<size_t>(shape[d - 1]);
  for (size_t c = 0; c < elements; ++c) {
    size_t f = 0;
    for (size_t d = 0; d < rank; ++d)
      f += static_cast<size_t>(index[d]) * stride[d];
    std::memcpy(&out[c * elementSize], &in[f * elementSize], elementSize);
    // Advance the C-order index (last dimension fastest).
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}

bool readWholeFile(const std::string &path, std::vector<unsigned char> &out,
                   std::string &error) {
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> closer(file, std::fclose);
  out.clear();
  unsigned char chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof(chunk), file)) > 0)
    out.insert(out.end(), chunk, chunk + n);
  if (std::ferror(file)) {
    error = path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  return true;
}

std::string zipErrorText(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

size_t Array::numElements() const {
  size_t elements = 1;
  for (int64_t extent : shape)
    elements *= static_cast<size_t>(extent);
  return elements;
}

size_t Array::numBytes() const { return numElements() * pd_dtype_size(dtype); }

std::string describe(pd_dtype dtype, const std::vector<int64_t> &shape) {
  return describeType(dtype, shape.data(), shape.size());
}

bool dtypeToDescr(pd_dtype dtype, std::string &descr) {
  switch (dtype) {
  case PD_DTYPE_F32:
    descr = "<f4";
    return true;
  case PD_DTYPE_F64:
    descr = "<f8";
    return true;
  case PD_DTYPE_F16:
    descr = "<f2";
    return true;
  case PD_DTYPE_I64:
    descr = "<i8";
    return true;
  case PD_DTYPE_I32:
    descr = "<i4";
    return true;
  case PD_DTYPE_I8:
    descr = "|i1";
    return true;
  case PD_DTYPE_U8:
    descr = "|u1";
    return true;
  case PD_DTYPE_U16:
    descr = "<u2";
    return true;
  case PD_DTYPE_I16:
    descr = "<i2";
    return true;
  case PD_DTYPE_U32:
    descr = "<u4";
    return true;
  case PD_DTYPE_U64:
    descr = "<u8";
    return true;
  case PD_DTYPE_I1:
    descr = "|b1";
    return true;
  case PD_DTYPE_BF16:
    // numpy has no bfloat16: its bit patterns travel as uint16, as ONNX's
    // numpy_helper and most tools exchange them.
    descr = "<u2";
    return true;
  case PD_DTYPE_MAX_ENUM_:
    break;
  }
  return false;
}

bool dtypeFromDescr(const std::string &descr, pd_dtype &dtype,
                    std::string &error) {
  std::string body = descr;
  char order = '=';
  if (!body.empty() && std::strchr("<>|=", body[0])) {
    order = body[0];
    body = body.substr(1);
  }
  static const struct {
    const char *body;
    pd_dtype dtype;
  } kTable[] = {
      {"f4", PD_DTYPE_F32}, {"f8", PD_DTYPE_F64}, {"f2", PD_DTYPE_F16},
      {"i8", PD_DTYPE_I64}, {"i4", PD_DTYPE_I32}, {"i1", PD_DTYPE_I8},
      {"u1", PD_DTYPE_U8},  {"b1", PD_DTYPE_I1},
      {"u4", PD_DTYPE_U32}, {"u8", PD_DTYPE_U64}, {"i2", PD_DTYPE_I16},
      // bf16 bit patterns, also accepted by u16 buffers (runtime.h).
      {"u2", PD_DTYPE_BF16},
  };
  for (const auto &entry : kTable) {
    if (body != entry.body)
      continue;
    if (order == '>' && pd_dtype_size(entry.dtype) > 1) {
      error = "big-endian dtype '" + printable(descr) +
              "' is not supported (convert with .astype('<" + body + "'))";
      return false;
    }
    dtype = entry.dtype;
    return true;
  }
  if (body == "O")
    error = "object arrays ('" + printable(descr) + "') are not supported";
  else
    error = "numpy dtype '" + printable(descr) +
            "' has no pipedream equivalent (supported: <f4 <f8 <f2 <i8 <i4 "
            "|i1 |u1 |b1 <i2 <u4 <u8, and <u2 for uint16 or bf16 bit patterns)";
  return false;
}

bool parseNpy(const void *data, size_t size, Array &out, std::string &error) {
  const unsigned char *bytes = static_cast<const unsigned char *>(data);
  if (size < kMagicSize + 2 || std::memcmp(bytes, kMagic, kMagicSize) != 0) {
    error = "not an .npy file (bad magic)";
    return false;
  }
  unsigned major = bytes[6], minor = bytes[7];
  size_t headerLength, headerStart;
  if (major == 1 && minor == 0) {
    if (size < 10) {
      error = "truncated .npy header";
      return false;
    }
    headerLength = bytes[8] | (static_cast<size_t>(bytes[9]) << 8);
    headerStart = 10;
  } else if ((major == 2 || major == 3) && minor == 0) {
    if (size < 12) {
      error = "truncated .npy header";
      return false;
    }
    headerLength = bytes[8] | (static_cast<size_t>(bytes[9]) << 8) |
                   (static_cast<size_t>(bytes[10]) << 16) |
                   (static_cast<size_t>(bytes[11]) << 24);
    headerStart = 12;
  } else {
    error = "unsupported .npy format version " + std::to_string(major) + "." +
            std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)";
    return false;
  }
  if (headerLength > size - headerStart) {
    error = "truncated .npy header (" + std::to_string(headerLength) +
            " bytes announced, " + std::to_string(size - headerStart) +
            " present)";
    return false;
  }
  std::string header(reinterpret_cast<const char *>(bytes + headerStart),
                     headerLength);
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
  if (!HeaderParser(header).parse(descr, fortranOrder, shape, error))
    return false;
  pd_dtype dtype;
  if (!dtypeFromDescr(descr, dtype, error))
    return false;
  size_t elements, needed;
  if (!sizeOf(dtype, shape, elements, needed)) {
    error = "array " + describe(dtype, shape) + " is too large";
    return false;
  }
  size_t dataStart = headerStart + headerLength;
  size_t present = size - dataStart;
  if (present != needed) {
    error = (present < needed ? "truncated data: " : "unexpected data size: ") +
            std::to_string(present) + " bytes, " + describe(dtype, shape) +
            " needs " + std::to_string(needed);
    return false;
  }
  out.dtype = dtype;
  out.shape = std::move(shape);
  out.data.assign(bytes + dataStart, bytes + size);
  if (fortranOrder && out.shape.size() > 1)
    out.data =
        fortranToC(out.data, out.shape, pd_dtype_size(dtype), elements);
  return true;
}

bool serializeNpy(const Array &array, std::vector<unsigned char> &out,
                  std::string &error) {
  std::string descr;
  if (!dtypeToDescr(array.dtype, descr)) {
    error = std::string("dtype ") + pd_dtype_name(array.dtype) +
            " has no numpy equivalent";
    return false;
  }
  size_t elements, needed;
  if (!sizeOf(array.dtype, array.shape, elements, needed)) {
    error = "array " + describe(array.dtype, array.shape) + " is invalid";
    return false;
  }
  if (array.data.size() != needed) {
    error = "array " + describe(array.dtype, array.shape) + " needs " +
            std::to_string(needed) + " bytes of data, has " +
            std::to_string(array.data.size());
    return false;
  }
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < array.shape.size(); ++i) {
    header += std::to_string(array.shape[i]);
    if (array.shape.size() == 1 || i + 1 < array.shape.size())
      header += array.shape.size() == 1 ? "," : ", ";
  }
  header += "), }";
  // Pad with spaces and end with '\n' so the data is kHeaderAlign-aligned.
  size_t prefix = kMagicSize + 2 + 2;
  bool version2 = false;
  size_t total = (prefix + header.size() + 1 + kHeaderAlign - 1) /
                 kHeaderAlign * kHeaderAlign;
  if (total - prefix > 0xffff) {
    version2 = true;
    prefix += 2;
    total = (prefix + header.size() + 1 + kHeaderAlign - 1) / kHeaderAlign *
            kHeaderAlign;
  }
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  out.clear();
  out.reserve(total + needed);
  out.insert(out.end(), kMagic, kMagic + kMagicSize);
  out.push_back(version2 ? 2 : 1);
  out.push_back(0);
  size_t length = header.size();
  out.push_back(static_cast<unsigned char>(length & 0xff));
  out.push_back(static_cast<unsigned char>((length >> 8) & 0xff));
  if (version2) {
    out.push_back(static_cast<unsigned char>((length >> 16) & 0xff));
    out.push_back(static_cast<unsigned char>((length >> 24) & 0xff));
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), array.data.begin(), array.data.end());
  return true;
}

bool readNpy(const std::string &path, Array &out, std::string &error) {
  try {
    std::vector<unsigned char> bytes;
    if (!readWholeFile(path, bytes, error))
      return false;
    if (!parseNpy(bytes.data(), bytes.size(), out, error)) {
      error = path + ": " + error;
      return false;
    }
    return true;
  } catch (const std::exception &e) {
    error = path + ": " + e.what();
    return false;
  }
}

bool writeNpy(const std::string &path, const Array &array,
              std::string &error) {
  try {
    std::vector<unsigned char> bytes;
    if (!serializeNpy(array, bytes, error)) {
      error = path + ": " + error;
      return false;
    }
    std::FILE *file = std::fopen(path.c_str(), "wb");
    if (!file) {
      error = path + ": cannot create: " + std::strerror(errno);
      return false;
    }
    bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
    int writeErrno = errno;
    if (std::fclose(file) != 0 && ok) {
      ok = false;
      writeErrno = errno;
    }
    if (!ok) {
      error = path + ": cannot write: " + std::strerror(writeErrno);
      return false;
    }
    return true;
  } catch (const std::exception &e) {
    error = path + ": " + e.what();
    return false;
  }
}

namespace {

/// Reads every member of an open archive; messages start with `prefix`
/// ("PATH: ", or "" for an image in memory).
bool readArchive(zip_t *archive, const std::string &prefix, NamedArrays &out,
                 std::string &error) {
  zip_int64_t count = zip_get_num_entries(archive, 0);
  if (count < 0) {
    error = prefix + zip_strerror(archive);
    return false;
  }
  std::set<std::string> names;
  std::vector<unsigned char> bytes;
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(archive, static_cast<zip_uint64_t>(i), 0, &st) != 0) {
      error = prefix + zip_strerror(archive);
      return false;
    }
    std::string member = (st.valid & ZIP_STAT_NAME) && st.name ? st.name : "";
    // For messages: names come from the file.
    const std::string shown = printable(member);
    if (!member.empty() && member.back() == '/')
      continue; // A directory entry; np.savez writes none.
    if (!endsWith(member, ".npy")) {
      error = prefix + "member '" + shown + "' is not an .npy array";
      return false;
    }
    std::string name = member.substr(0, member.size() - 4);
    if (!names.insert(name).second) {
      error = prefix + "duplicate array '" + printable(name) + "'";
      return false;
    }
    if (!(st.valid & ZIP_STAT_SIZE)) {
      error = prefix + "member '" + shown + "' has no size";
      return false;
    }
    zip_file_t *file =
        zip_fopen_index(archive, static_cast<zip_uint64_t>(i), 0);
    if (!file) {
      error = prefix + "member '" + shown +
              "': cannot open: " + zip_strerror(archive);
      return false;
    }
    std::unique_ptr<zip_file_t, int (*)(zip_file_t *)> fileCloser(file,
                                                                  zip_fclose);
    // The size in the directory is the file's word, not a fact: grow the
    // buffer with the data actually read (a damaged directory announcing
    // terabytes must not allocate them).
    bytes.clear();
    constexpr zip_uint64_t kChunk = 1 << 20;
    zip_uint64_t done = 0;
    while (done < st.size) {
      zip_uint64_t want = std::min<zip_uint64_t>(kChunk, st.size - done);
      bytes.resize(static_cast<size_t>(done + want));
      zip_int64_t n = zip_fread(file, bytes.data() + done, want);
      if (n < 0) {
        error = prefix + "member '" + shown +
                "': corrupt data: " + zip_file_strerror(file);
        return false;
      }
      if (n == 0)
        break;
      done += static_cast<zip_uint64_t>(n);
    }
    bytes.resize(static_cast<size_t>(done));
    // Reading to the end makes libzip check the CRC.
    char extra;
    zip_int64_t tail = zip_fread(file, &extra, 1);
    if (done != st.size || tail != 0) {
      error = prefix + "member '" + shown + "': corrupt data: " +
              (tail < 0 ? std::string(zip_file_strerror(file))
                        : std::string("size does not match the directory"));
      return false;
    }
    Array array;
    if (!parseNpy(bytes.data(), bytes.size(), array, error)) {
      error = prefix + "array '" + printable(name) + "': " + error;
      return false;
    }
    out.emplace_back(std::move(name), std::move(array));
  }
  return true;
}

} // namespace

bool readNpz(const std::string &path, NamedArrays &out, std::string &error) {
  out.clear();
  try {
    // Open it ourselves first: errno gives better messages than libzip, and
    // libzip takes an empty file for an empty archive.
    std::FILE *probe = std::fopen(path.c_str(), "rb");
    if (!probe) {
      error = path + ": cannot open: " + std::strerror(errno);
      return false;
    }
    int c = std::fgetc(probe);
    bool readError = std::ferror(probe);
    int probeErrno = errno;
    std::fclose(probe);
    if (readError) {
      error = path + ": cannot read: " + std::strerror(probeErrno);
      return false;
    }
    if (c == EOF) {
      error = path + ": not an .npz file (empty)";
      return false;
    }

    int code = 0;
    zip_t *archive = zip_open(path.c_str(), ZIP_RDONLY, &code);
    if (!archive) {
      error = path + ": not a readable .npz (zip) file: " + zipErrorText(code);
      return false;
    }
    std::unique_ptr<zip_t, void (*)(zip_t *)> closer(archive, zip_discard);
    return readArchive(archive, path + ": ", out, error);
  } catch (const std::exception &e) {
    error = path + ": " + e.what();
    return false;
  }
}

bool parseNpz(const void *bytes, size_t size, NamedArrays &out,
              std::string &error) {
  out.clear();
  try {
    if (size == 0) {
      error = "not an .npz file (empty)";
      return false;
    }
    zip_error_t zipError;
    zip_error_init(&zipError);
    zip_source_t *source =
        zip_source_buffer_create(bytes, size, /*freep=*/0, &zipError);
    if (!source) {
      error = std::string("cannot read the .npz image: ") +
              zip_error_strerror(&zipError);
      zip_error_fini(&zipError);
      return false;
    }
    zip_t *archive = zip_open_from_source(source, ZIP_RDONLY, &zipError);
    if (!archive) {
      error = std::string("not a readable .npz (zip) file: ") +
              zip_error_strerror(&zipError);
      zip_source_free(source);
      zip_error_fini(&zipError);
      return false;
    }
    zip_error_fini(&zipError);
    // The archive owns the source from here.
    std::unique_ptr<zip_t, void (*)(zip_t *)> closer(archive, zip_discard);
    return readArchive(archive, "", out, error);
  } catch (const std::exception &e) {
    error = e.what();
    return false;
  }
}

bool writeNpz(const std::string &path, const NamedArrays &arrays,
              Compression compression, std::string &error) {
  try {
    std::set<std::string> names;
    std::vector<std::vector<unsigned char>> images(arrays.size());
    for (size_t i = 0; i < arrays.size(); ++i) {
      const std::string &name = arrays[i].first;
      if (name.empty()) {
        error = path + ": an array has an empty name";
        return false;
      }
      if (!names.insert(name).second) {
        error = path + ": duplicate array '" + name + "'";
        return false;
      }
      if (!serializeNpy(arrays[i].second, images[i], error)) {
        error = path + ": array '" + name + "': " + error;
        return false;
      }
    }
    if (arrays.empty()) {
      // libzip deletes an archive with no entries instead of writing it;
      // np.savez() writes the 22-byte end-of-central-directory record.
      static const unsigned char kEmptyZip[22] = {0x50, 0x4b, 0x05, 0x06};
      std::FILE *file = std::fopen(path.c_str(), "wb");
      if (!file) {
        error = path + ": cannot create: " + std::strerror(errno);
        return false;
      }
      bool ok = std::fwrite(kEmptyZip, 1, sizeof(kEmptyZip), file) ==
                sizeof(kEmptyZip);
      ok = std::fclose(file) == 0 && ok;
      if (!ok) {
        error = path + ": cannot write: " + std::strerror(errno);
        return false;
      }
      return true;
    }

    int code = 0;
    zip_t *archive = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
    if (!archive) {
      error = path + ": cannot create: " + zipErrorText(code);
      return false;
    }
    for (size_t i = 0; i < arrays.size(); ++i) {
      std::string member = arrays[i].first + ".npy";
      zip_source_t *source =
          zip_source_buffer(archive, images[i].data(), images[i].size(), 0);
      zip_int64_t index =
          source ? zip_file_add(archive, member.c_str(), source,
                                ZIP_FL_OVERWRITE | ZIP_FL_ENC_UTF_8)
                 : -1;
      if (index < 0 ||
          zip_set_file_compression(archive, static_cast<zip_uint64_t>(index),
                                   compression == Compression::Deflated
                                       ? ZIP_CM_DEFLATE
                                       : ZIP_CM_STORE,
                                   0) != 0) {
        error = path + ": cannot add '" + member + "': " +
                zip_strerror(archive);
        if (source && index < 0)
          zip_source_free(source);
        zip_discard(archive);
        return false;
      }
    }
    // zip_close writes a temporary file and renames it over `path`; the
    // images must stay alive until then.
    if (zip_close(archive) != 0) {
      error = path + ": cannot write: " + zip_strerror(archive);
      zip_discard(archive);
      return false;
    }
    return true;
  } catch (const std::exception &e) {
    error = path + ": " + e.what();
    return false;
  }
}

} // namespace npy
} // namespace pipedream
