#include "npy.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "output_file.h"
#include "tilescope/ir/diag.h"

namespace tilescope::cli {

namespace {

// The item size of a normalized descr ("|b1", "<f4", ...), or 0.
int descr_bytes(std::string_view d) {
  static const char* const known[] = {"|b1", "|i1", "|u1", "<i2", "<i4", "<i8",
                                      "<u2", "<u4", "<u8", "<f2", "<f4", "<f8"};
  for (const char* k : known)
    if (d == k) return d[2] - '0';
  return 0;
}

// The header dict, a Python literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// (numpy.lib.format writes it with repr; its reader takes any literal and then checks the fields).
class Header {
 public:
  Header(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  NpyArray parse() {
    expect('{', "the header must be a dict ('{...}')");
    bool descr = false, fortran = false, shape = false;
    NpyArray a;
    while (!accept('}')) {
      std::string key = string_literal("a key");
      expect(':', fmt::format("':' after '{}'", key));
      if (key == "descr") {
        once(descr, key);
        a.descr = parse_descr();
      } else if (key == "fortran_order") {
        once(fortran, key);
        if (parse_bool(key)) bad("Fortran-order arrays are not supported; save with np.ascontiguousarray");
      } else if (key == "shape") {
        once(shape, key);
        a.shape = parse_shape();
      } else {
        bad(fmt::format("unexpected key '{}' (a .npy header has 'descr', 'fortran_order' and 'shape')", key));
      }
      if (!accept(',')) {
        expect('}', "',' or '}' after a value");
        break;
      }
    }
    skip_space();
    if (i_ != s_.size()) bad("unexpected text after the header dict");
    for (auto [seen, name] : {std::pair{descr, "descr"}, {fortran, "fortran_order"}, {shape, "shape"}})
      if (!seen) bad(fmt::format("the header has no '{}'", name));
    return a;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    throw Error(fmt::format("{}: bad .npy header: {}", path_, what));
  }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool accept(char c) {
    skip_space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c, const std::string& what) {
    if (!accept(c)) bad(fmt::format("expected {} at byte {} of the header", what, i_));
  }
  void once(bool& seen, const std::string& key) {
    if (seen) bad(fmt::format("'{}' is given twice", key));
    seen = true;
  }
  std::string string_literal(const std::string& what) {
    skip_space();
    char q = i_ < s_.size() ? s_[i_] : '\0';
    if (q != '\'' && q != '"')
      bad(fmt::format("expected {} (a quoted string) at byte {} of the header", what, i_));
    size_t end = s_.find(q, i_ + 1);
    if (end == std::string_view::npos) bad("unterminated string");
    std::string_view v = s_.substr(i_ + 1, end - i_ - 1);
    if (v.find('\\') != std::string_view::npos || v.find('\n') != std::string_view::npos)
      bad(fmt::format("unexpected string {}", s_.substr(i_, end + 1 - i_)));
    i_ = end + 1;
    return std::string(v);
  }
  std::string parse_descr() {
    skip_space();
    if (i_ < s_.size() && s_[i_] == '[') bad("structured arrays (a list 'descr') are not supported");
    std::string d = string_literal("'descr' as a string");
    std::string n = d;
    // One-byte items have no byte order: numpy writes "|", and reads "<" and ">" alike.
    if (n.size() == 3 && n[2] == '1' && (n[0] == '<' || n[0] == '>')) n[0] = '|';
    if (!descr_bytes(n)) {
      if (n.size() > 2 && n[0] == '>')
        bad(fmt::format(
            "big-endian dtype '{}' is not supported (save with arr.astype(arr.dtype.newbyteorder('<')))", d));
      bad(fmt::format(
          "unsupported dtype '{}' (tilescope reads bool, int8..int64, uint8..uint64, float16, float32 "
          "and float64 arrays)",
          d));
    }
    return n;
  }
  bool parse_bool(const std::string& key) {
    skip_space();
    for (auto [word, value] : {std::pair{std::string_view("True"), true}, {std::string_view("False"), false}})
      if (s_.substr(i_, word.size()) == word) {
        i_ += word.size();
        return value;
      }
    bad(fmt::format("'{}' must be True or False", key));
  }
  std::vector<int64_t> parse_shape() {
    expect('(', "'shape' as a tuple of integers, such as (2, 3)");
    std::vector<int64_t> dims;
    bool comma = false;
    while (!accept(')')) {
      dims.push_back(dimension());
      comma = accept(',');
      if (!comma) {
        expect(')', "',' or ')' in 'shape'");
        break;
      }
    }
    if (dims.size() == 1 && !comma) bad("'shape' must be a tuple: one dimension is written (N,)");
    return dims;
  }
  int64_t dimension() {
    skip_space();
    if (i_ < s_.size() && s_[i_] == '-') bad("'shape' has a negative dimension");
    size_t start = i_;
    int64_t v = 0;
    bool overflow = false;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      overflow |= __builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[i_] - '0', &v);
      ++i_;
    }
    if (i_ == start) bad(fmt::format("'shape' must hold integers (at byte {} of the header)", start));
    if (overflow) bad(fmt::format("dimension {} is too large", s_.substr(start, i_ - start)));
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 long literals (old numpy writers)
    return v;
  }

  std::string_view s_;
  const std::string& path_;
  size_t i_ = 0;
};

// A shape as numpy prints it: (), (4,), (2, 3).
std::string shape_str(const std::vector<int64_t>& shape) {
  return fmt::format("({}{})", fmt::join(shape, ", "), shape.size() == 1 ? "," : "");
}

uint32_t little_endian(std::string_view b, size_t at, int bytes) {
  uint32_t v = 0;
  for (int k = 0; k < bytes; ++k)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(b[at + k])) << (8 * k);
  return v;
}

}  // namespace

int NpyArray::item_bytes() const { return descr_bytes(descr); }

NpyArray parse_npy(std::string_view file, const std::string& path) {
  if (file.size() < 8 || file.substr(0, 6) != "\x93NUMPY")
    throw Error(fmt::format("{}: not a .npy file (no \\x93NUMPY magic)", path));
  int major = static_cast<unsigned char>(file[6]), minor = static_cast<unsigned char>(file[7]);
  if (major < 1 || major > 3 || minor != 0)
    throw Error(fmt::format("{}: unsupported .npy format version {}.{} (1.0, 2.0 and 3.0 are read)", path,
                            major, minor));
  size_t len_bytes = major == 1 ? 2 : 4, hstart = 8 + len_bytes;
  if (file.size() < hstart) throw Error(fmt::format("{}: truncated .npy header", path));
  size_t hlen = little_endian(file, 8, static_cast<int>(len_bytes));
  if (hlen > file.size() - hstart)
    throw Error(fmt::format("{}: truncated .npy header ({} bytes announced, {} present)", path, hlen,
                            file.size() - hstart));
  NpyArray a = Header(file.substr(hstart, hlen), path).parse();
  int64_t n = 1, bytes = 0;
  for (int64_t d : a.shape)
    if (__builtin_mul_overflow(n, d, &n))
      throw Error(
          fmt::format("{}: shape {} has more elements than int64 can count", path, shape_str(a.shape)));
  if (__builtin_mul_overflow(n, static_cast<int64_t>(a.item_bytes()), &bytes))
    throw Error(fmt::format("{}: shape {} of {}-byte items is more bytes than int64 can count", path,
                            shape_str(a.shape), a.item_bytes()));
  size_t start = hstart + hlen;
  if (static_cast<uint64_t>(bytes) > file.size() - start)
    throw Error(fmt::format("{}: truncated data ({} of {} bytes for shape {})", path, file.size() - start,
                            bytes, shape_str(a.shape)));
  a.data.resize(static_cast<size_t>(bytes));
  if (bytes > 0)  // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(a.data.data(), file.data() + start, static_cast<size_t>(bytes));
  return a;
}

NpyArray read_npy(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  std::string all;
  int err = ::fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
  char buf[1 << 16];
  while (!err) {
    ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) err = errno;
    if (got <= 0) break;
    all.append(buf, static_cast<size_t>(got));
  }
  ::close(fd);
  if (err) throw Error(fmt::format("{}: cannot read: {}", path, std::strerror(err)));
  return parse_npy(all, path);
}

void write_npy(const std::string& path, const NpyArray& a) {
  std::string shape;
  for (auto d : a.shape) shape += fmt::format("{}, ", d);
  if (a.shape.size() > 1)
    shape.resize(shape.size() - 2);
  else if (a.shape.size() == 1)
    shape.resize(shape.size() - 1);
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", a.descr, shape);
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  const char preamble[10] = {'\x93',
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             static_cast<char>(header.size() & 0xff),
                             static_cast<char>(header.size() >> 8)};
  write_file_atomically(path,
                        {std::string_view(preamble, sizeof preamble), header,
                         std::string_view(reinterpret_cast<const char*>(a.data.data()), a.data.size())});
}

}  // namespace tilescope::cli
