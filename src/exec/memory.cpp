// Buffer registration (see include/tilescope/exec/memory.h).
#include "tilescope/exec/memory.h"

#include "tilescope/ir/diag.h"

namespace tilescope::exec {

int Memory::add(Buffer b) {
  b.id = static_cast<int>(buffers_.size());
  auto host = reinterpret_cast<uint64_t>(b.host);
  b.vbase = (static_cast<uint64_t>(b.id + 1) << kRegionShift) + kRegionMid + (host & 4095);
  if (b.bytes >= kRegionMid) throw Error("buffer '" + b.name + "' is larger than 512 GiB");
  buffers_.push_back(std::move(b));
  return buffers_.back().id;
}

}  // namespace tilescope::exec
