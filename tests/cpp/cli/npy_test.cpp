// .npy files (src/cli/npy.cpp, src/cli/output_file.cpp; issue 8, items 10 and 9 for --save): every
// header field is checked as numpy.lib.format (NEP 1) defines it, sizes cannot overflow, and a write
// is checked, atomic and keeps the file it replaces intact on failure. Expected bytes and headers are
// the format's, written out by hand (numpy's `np.save` output for the same arrays).
#include "src/cli/npy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/cli/output_file.h"
#include "tilescope/ir/diag.h"

using namespace tilescope;
using namespace tilescope::cli;
namespace fs = std::filesystem;

namespace {

// A version 1.0 file (2-byte header length) or 2.0 / 3.0 (4-byte length) around `header`.
std::string npy(const std::string& header, const std::string& data = "", int major = 1) {
  std::string s = "\x93NUMPY";
  s += static_cast<char>(major);
  s += '\0';
  size_t n = header.size();
  s += static_cast<char>(n & 0xff);
  s += static_cast<char>((n >> 8) & 0xff);
  if (major > 1) {
    s += static_cast<char>((n >> 16) & 0xff);
    s += static_cast<char>((n >> 24) & 0xff);
  }
  return s + header + data;
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.begin(), s.size());
  return s;
}

// The message of parse_npy on `file`, or "(accepted)".
std::string error_of(const std::string& file) {
  try {
    parse_npy(file, "x.npy");
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A directory of its own for a test, removed with everything in it at the end of the test.
class Scratch {
 public:
  Scratch() : dir_(fs::temp_directory_path() / ("tilescope-npy-test-" + std::to_string(getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Scratch() { fs::remove_all(dir_); }
  fs::path operator/(const std::string& name) const { return dir_ / name; }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

}  // namespace

TEST(Npy, ReadsWhatNumpyWrites) {
  // np.save of np.array([[1, 2, 3], [4, 5, 6]], np.float32): a header padded to 64 bytes in all.
  std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  h += std::string((64 - (10 + h.size() + 1) % 64) % 64, ' ') + "\n";
  NpyArray a = parse_npy(npy(h, floats({1, 2, 3, 4, 5, 6})), "x.npy");
  EXPECT_EQ(a.descr, "<f4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.item_bytes(), 4);
  ASSERT_EQ(a.data.size(), 24u);
  float back[6];
  std::memcpy(back, a.data.data(), 24);
  EXPECT_EQ(back[5], 6.0f);
}

TEST(Npy, ReadsEveryWayALiteralHeaderMayBeSpelled) {
  struct Case {
    std::string header, data;
    int major;
    std::string descr;
    std::vector<int64_t> shape;
  };
  const std::string four = floats({1, 2, 3, 4});
  for (const Case& c : std::vector<Case>{
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", four, 1, "<f4", {4}},
           {"{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (4,)}", four, 1, "<f4", {4}},
           {"{ 'shape' : ( 2 , 2 ) , 'fortran_order' : False , 'descr' : '<i4' }   \n",
            four,
            1,
            "<i4",
            {2, 2}},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", four.substr(0, 4), 1, "<f4", {}},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }\n", "", 1, "<f4", {0}},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (4L,), }\n", four, 1, "<f4", {4}},  // Python 2
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", four, 2, "<f4", {4}},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", four, 3, "<f4", {4}},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", four, 1, "<f4", {2}},  // more data
           {"{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }\n",
            std::string("\1\0\1\1", 4),
            1,
            "|b1",
            {4}},
           {"{'descr': '<u1', 'fortran_order': False, 'shape': (4,), }\n", "abcd", 1, "|u1", {4}},
           {"{'descr': '>i1', 'fortran_order': False, 'shape': (4,), }\n", "abcd", 1, "|i1", {4}},
           {"{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }\n", "abcd", 1, "<f2", {2}},
           {"{'descr': '<u8', 'fortran_order': False, 'shape': (1, 1), }\n", "abcdefgh", 1, "<u8", {1, 1}},
       }) {
    SCOPED_TRACE(c.header);
    NpyArray a = parse_npy(npy(c.header, c.data, c.major), "x.npy");
    EXPECT_EQ(a.descr, c.descr);
    EXPECT_EQ(a.shape, c.shape);
    int64_t n = 1;
    for (int64_t d : c.shape) n *= d;
    EXPECT_EQ(a.data.size(), static_cast<size_t>(n * a.item_bytes()));
  }
}

TEST(Npy, EveryBadFieldIsAClearError) {
  auto hdr = [](const std::string& descr, const std::string& fortran, const std::string& shape) {
    return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n";
  };
  const std::string d16(16, '\0');
  struct Case {
    std::string name, file, message;
  };
  for (const Case& c : std::vector<Case>{
           {"2^64 elements", npy(hdr("'<f4'", "False", "(4611686018427387904, 4)")),
            "shape (4611686018427387904, 4) has more elements than int64 can count"},
           {"2^64 bytes", npy(hdr("'<f4'", "False", "(2305843009213693952, 2)")),
            "is more bytes than int64 can count"},
           {"negative", npy(hdr("'<f4'", "False", "(-1,)"), d16), "'shape' has a negative dimension"},
           {"float dim", npy(hdr("'<f4'", "False", "(4.0,)"), d16), "',' or ')' in 'shape'"},
           {"huge dim", npy(hdr("'<f4'", "False", "(99999999999999999999,)"), d16),
            "dimension 99999999999999999999 is too large"},
           {"int shape", npy(hdr("'<f4'", "False", "4"), d16), "'shape' as a tuple of integers"},
           {"(4) is an int", npy(hdr("'<f4'", "False", "(4)"), d16), "one dimension is written (N,)"},
           {"no size", npy(hdr("'<f'", "False", "(4,)"), d16), "unsupported dtype '<f'"},
           {"bad size", npy(hdr("'<fx'", "False", "(4,)"), d16), "unsupported dtype '<fx'"},
           {"huge size", npy(hdr("'<f99999999999'", "False", "(4,)"), d16),
            "unsupported dtype '<f99999999999'"},
           {"3 bytes", npy(hdr("'<f3'", "False", "(4,)"), d16), "unsupported dtype '<f3'"},
           {"complex", npy(hdr("'<c8'", "False", "(1,)"), d16), "unsupported dtype '<c8'"},
           {"object", npy(hdr("'|O'", "False", "(1,)"), d16), "unsupported dtype '|O'"},
           {"big endian", npy(hdr("'>f4'", "False", "(4,)"), d16), "big-endian dtype '>f4' is not supported"},
           {"structured", npy(hdr("[('a', '<f4')]", "False", "(4,)"), d16), "structured arrays"},
           {"descr int", npy(hdr("4", "False", "(4,)"), d16), "'descr' as a string"},
           {"fortran 0", npy(hdr("'<f4'", "0", "(4,)"), d16), "'fortran_order' must be True or False"},
           {"fortran", npy(hdr("'<f4'", "True", "(4,)"), d16), "Fortran-order arrays are not supported"},
           {"no shape", npy("{'descr': '<f4', 'fortran_order': False}\n", d16), "the header has no 'shape'"},
           {"no descr", npy("{'fortran_order': False, 'shape': (4,)}\n", d16), "the header has no 'descr'"},
           {"no fortran", npy("{'descr': '<f4', 'shape': (4,)}\n", d16), "the header has no 'fortran_order'"},
           {"unknown key", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}\n", d16),
            "unexpected key 'x'"},
           {"twice", npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,)}\n", d16),
            "'descr' is given twice"},
           {"list", npy("['descr', '<f4']\n", d16), "the header must be a dict"},
           {"after dict", npy(hdr("'<f4'", "False", "(4,)") + "junk", d16),
            "unexpected text after the header"},
           {"unterminated", npy("{'descr: False}\n", d16), "unterminated string"},
           {"escape", npy("{'de\\scr': '<f4'}\n", d16), "unexpected string"},
           {"empty file", "", "not a .npy file"},
           {"magic", "\x93NUMPX\x01\x00", "not a .npy file"},
           {"version 9", npy(hdr("'<f4'", "False", "(4,)"), d16, 9), "unsupported .npy format version 9.0"},
           {"cut length", std::string("\x93NUMPY\x02\x00\x10", 9), "truncated .npy header"},
           {"header past end", npy(hdr("'<f4'", "False", "(4,)")).substr(0, 20),
            "truncated .npy header (58 bytes"},
           {"data", npy(hdr("'<f4'", "False", "(4,)"), d16.substr(1)),
            "truncated data (15 of 16 bytes for shape (4,))"},
       }) {
    SCOPED_TRACE(c.name);
    std::string msg = error_of(c.file);
    EXPECT_EQ(msg.rfind("x.npy: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
  }
  std::string minor = npy(hdr("'<f4'", "False", "(4,)"), d16);
  minor[7] = 5;
  EXPECT_NE(error_of(minor).find("version 1.5"), std::string::npos);
}

TEST(Npy, ReadingAMissingFileOrADirectoryNamesIt) {
  auto message = [](const std::string& path) {
    try {
      read_npy(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(message("/nonexistent/x.npy"), "/nonexistent/x.npy: cannot open: No such file or directory");
  Scratch scratch;
  fs::path dir = scratch / "dir.npy";
  fs::create_directories(dir);
  EXPECT_EQ(message(dir.string()), dir.string() + ": cannot read: Is a directory");
}

TEST(Npy, WritesTheFormatAndReadsItBack) {
  Scratch scratch;
  fs::path p = scratch / "out.npy";
  NpyArray a{"<f4", {2, 2}, {}};
  std::string bytes = floats({1.5f, -2, 3, 4});
  a.data.resize(bytes.size());
  std::memcpy(a.data.data(), bytes.data(), bytes.size());
  write_npy(p.string(), a);
  std::string file = slurp(p);
  // NEP 1: magic, version 1.0, little-endian header length, header padded with spaces to a multiple
  // of 64 bytes in all and ended by '\n', then the data.
  ASSERT_EQ(file.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t hlen = static_cast<unsigned char>(file[8]) | (static_cast<unsigned char>(file[9]) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);
  EXPECT_EQ(file[10 + hlen - 1], '\n');
  EXPECT_EQ(file.substr(10, 59), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }");
  EXPECT_EQ(file.substr(10 + hlen), bytes);
  NpyArray b = read_npy(p.string());
  EXPECT_EQ(b.descr, a.descr);
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.data, a.data);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data.data()) % 64, 0u);  // as a torch tensor's (npy.h)
  // Nothing else is left in the directory (the temporary file was renamed).
  int files = 0;
  for (auto& e : fs::directory_iterator(scratch.dir())) files += e.path().filename().string()[0] == '.';
  EXPECT_EQ(files, 0);
}

TEST(Npy, FailedWritesSayWhyAndLeaveTheOldFile) {
  auto message = [](const std::string& path, const std::string& text) {
    try {
      write_file_atomically(path, {text});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(written)");
  };
  if (fs::exists("/dev/full")) {
    EXPECT_EQ(message("/dev/full", "x"), "/dev/full: cannot write: No space left on device");
    struct stat st {};
    ASSERT_EQ(stat("/dev/full", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));  // written in place, not replaced by a file
  }
  Scratch scratch;
  fs::path missing = scratch / "no-such-dir" / "out.npy";
  EXPECT_EQ(message(missing.string(), "x"), missing.string() + ": cannot write: No such file or directory");
  // A write into a directory that is a file fails the same way, and the file is unchanged.
  fs::path file = scratch / "plain";
  std::ofstream(file) << "old";
  EXPECT_EQ(message((file / "x.npy").string(), "x"),
            (file / "x.npy").string() + ": cannot write: Not a directory");
  EXPECT_EQ(slurp(file), "old");
}

TEST(Npy, ReplacingKeepsPermissionsAndSymbolicLinks) {
  Scratch scratch;
  fs::path target = scratch / "target.npy", link = scratch / "link.npy";
  std::ofstream(target) << "old";
  ASSERT_EQ(chmod(target.c_str(), 0640), 0);
  fs::create_symlink(target.filename(), link);
  write_file_atomically(link.string(), {"new ", "content"});
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(target), "new content");
  struct stat st {};
  ASSERT_EQ(stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}
