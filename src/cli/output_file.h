// Writing the command's output files (`run --save`) so that a failure is never silent and never
// leaves a half-written file.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace tilescope::cli {

/// Write `parts`, in order, as the whole content of `path`.
///
/// A regular file (or a new one) is written to a temporary file in the same directory, flushed to
/// disk and renamed over `path`: a reader sees the old file or the new one, never a partial one,
/// and a failure leaves the old file as it was. The new file keeps an existing file's permissions (a
/// new one gets 0666 less the umask); a symbolic link is followed and kept. Anything else (a device
/// such as /dev/null or /dev/full, a FIFO) is written in place. Every write is checked: throws
/// tilescope::Error "PATH: cannot write: REASON" (the system's reason, e.g. "No space left on
/// device") and removes the temporary file.
void write_file_atomically(const std::string& path, std::initializer_list<std::string_view> parts);

}  // namespace tilescope::cli
