#include "output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "tilescope/ir/diag.h"

namespace tilescope::cli {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& path, int err) {
  throw Error(fmt::format("{}: cannot write: {}", path, std::strerror(err)));
}

// Writes every part to `fd`; 0, or the errno of the first failed write.
int write_all(int fd, std::initializer_list<std::string_view> parts) {
  for (std::string_view part : parts) {
    while (!part.empty()) {
      ssize_t n = ::write(fd, part.data(), part.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno;
      }
      part.remove_prefix(static_cast<size_t>(n));
    }
  }
  return 0;
}

// The file a path names once symbolic links are followed (the link itself is left in place);
// a dangling link names the file it would create.
fs::path follow_links(fs::path p) {
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p;
    fs::path target = fs::read_symlink(p, ec);
    if (ec) return p;
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  return p;  // a loop: opening it gives the system's ELOOP
}

mode_t new_file_mode() {
  mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

}  // namespace

void write_file_atomically(const std::string& path, std::initializer_list<std::string_view> parts) {
  fs::path target = follow_links(path);
  struct stat st {};
  bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a FIFO: it cannot be replaced by a rename, and a partial write is its nature.
    int fd = ::open(target.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) fail(path, errno);
    int err = write_all(fd, parts);
    if (::close(fd) != 0 && err == 0) err = errno;
    if (err) fail(path, err);
    return;
  }
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  // Built by appending: GCC 12 warns (-Wrestrict, a false positive) on "." + std::string + "...".
  std::string temp_name = ".";
  temp_name += target.filename().string();
  temp_name += ".tmp-XXXXXX";
  std::string templ = (dir / temp_name).string();
  std::vector<char> name(templ.begin(), templ.end());
  name.push_back('\0');
  int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) fail(path, errno);
  int err = 0;
  if (::fchmod(fd, exists ? (st.st_mode & 07777) : new_file_mode()) != 0) err = errno;
  if (!err) err = write_all(fd, parts);
  if (!err && ::fsync(fd) != 0) err = errno;  // a delayed-allocation or network file system reports here
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && ::rename(name.data(), target.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(name.data());
    fail(path, err);
  }
}

}  // namespace tilescope::cli
