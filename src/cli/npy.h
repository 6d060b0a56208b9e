// NumPy .npy files (format version 1.0/2.0, little-endian, C order), as the `run` command's
// buffer inputs and `--save` outputs. Format: numpy.lib.format (NEP 1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tilescope::cli {

struct NpyArray {
  std::string descr;  // e.g. "<f4", "<u2", "|b1"
  std::vector<int64_t> shape;
  std::vector<std::byte> data;
  int item_bytes() const;
};

/// Read `path`; throws tilescope::Error naming the file for anything it cannot read (Fortran
/// order, big-endian, object arrays, truncated data).
NpyArray read_npy(const std::string& path);
void write_npy(const std::string& path, const NpyArray& a);

}  // namespace tilescope::cli
