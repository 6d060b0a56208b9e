#include "npy.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <regex>

#include "tilescope/ir/diag.h"

namespace tilescope::cli {

int NpyArray::item_bytes() const {
  if (descr.size() < 3) return 0;
  return std::stoi(descr.substr(2));
}

NpyArray read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("{}: cannot open", path));
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (all.size() < 10 || all.compare(0, 6, "\x93NUMPY") != 0)
    throw Error(fmt::format("{}: not a .npy file", path));
  int major = static_cast<unsigned char>(all[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<unsigned char>(all[8]) | (static_cast<unsigned char>(all[9]) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (all.size() < 12) throw Error(fmt::format("{}: truncated .npy header", path));
    hlen = 0;
    for (int i = 0; i < 4; ++i)
      hlen |= static_cast<size_t>(static_cast<unsigned char>(all[8 + i])) << (8 * i);
    hstart = 12;
  } else {
    throw Error(fmt::format("{}: unsupported .npy version {}", path, major));
  }
  if (hstart + hlen > all.size()) throw Error(fmt::format("{}: truncated .npy header", path));
  std::string header = all.substr(hstart, hlen);
  std::smatch m;
  NpyArray a;
  if (!std::regex_search(header, m, std::regex("'descr'\\s*:\\s*'([^']*)'")))
    throw Error(fmt::format("{}: .npy header has no descr", path));
  a.descr = m[1];
  if (a.descr.size() < 3 || (a.descr[0] != '<' && a.descr[0] != '|') ||
      std::string("fiub").find(a.descr[1]) == std::string::npos)
    throw Error(fmt::format("{}: unsupported dtype '{}' (little-endian numbers only)", path, a.descr));
  if (std::regex_search(header, m, std::regex("'fortran_order'\\s*:\\s*True")))
    throw Error(
        fmt::format("{}: Fortran-order arrays are not supported; save with np.ascontiguousarray", path));
  if (!std::regex_search(header, m, std::regex("'shape'\\s*:\\s*\\(([^)]*)\\)")))
    throw Error(fmt::format("{}: .npy header has no shape", path));
  std::string dims = m[1];
  std::regex num("[0-9]+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it)
    a.shape.push_back(std::stoll(it->str()));
  int64_t n = 1;
  for (auto d : a.shape) n *= d;
  size_t bytes = static_cast<size_t>(n) * a.item_bytes();
  size_t start = hstart + hlen;
  if (all.size() - start < bytes)
    throw Error(fmt::format("{}: truncated data ({} of {} bytes)", path, all.size() - start, bytes));
  a.data.resize(bytes);
  std::memcpy(a.data.data(), all.data() + start, bytes);
  return a;
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
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("{}: cannot write", path));
  f.write("\x93NUMPY\x01\x00", 8);
  uint16_t hl = static_cast<uint16_t>(header.size());
  char hb[2] = {static_cast<char>(hl & 0xff), static_cast<char>(hl >> 8)};
  f.write(hb, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(reinterpret_cast<const char*>(a.data.data()), static_cast<std::streamsize>(a.data.size()));
  if (!f) throw Error(fmt::format("{}: write failed", path));
}

}  // namespace tilescope::cli
