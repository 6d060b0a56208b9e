// Argument contents in the trace (docs/trace-format.md, `contents` and `content_chunks`): a buffer that
// repeats a short pattern (zeros, a fill value, the uninitialized-memory sentinel of a fresh
// torch.empty) is stored as the pattern and its period; the stored bytes are split into rows of at most
// kChunkBytes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>

#include "sqlite.h"

namespace tilescope::trace {

/// Bytes of stored contents per `content_chunks` row. SQLite assembles each row in one heap buffer
/// before writing it: a row holding a whole 64 MiB tensor costs a fresh 64 MiB allocation, faulted in
/// page by page, and a copy; 1 MiB rows reuse one buffer and wrote 192 MiB about 3x faster
/// (`make bench-analyses`, traced vector_add).
inline constexpr uint64_t kChunkBytes = uint64_t{1} << 20;

/// Inserts the `n` bytes at `data` as the chunks of (launch, arg, phase); returns the number of rows
/// (an empty buffer is one empty chunk). `ins` is `INSERT INTO content_chunks(launch, arg, phase, chunk,
/// data) VALUES (?, ?, ?, ?, ?)`.
inline int64_t write_chunks(Stmt& ins, int64_t launch, int64_t arg, const char* phase, const std::byte* data,
                            uint64_t n) {
  int64_t chunk = 0;
  uint64_t at = 0;
  do {
    const uint64_t len = std::min(kChunkBytes, n - at);
    ins.bind(1, launch).bind(2, arg).bind(3, phase).bind(4, chunk).blob(5, data + at, len).run();
    at += len;
    ++chunk;
  } while (at < n);
  return chunk;
}

/// The stored bytes of (launch, arg, phase): its `chunks` rows concatenated. std::nullopt when a chunk
/// is missing (a damaged trace).
inline std::optional<std::string> read_chunks(const Db& db, int64_t launch, int64_t arg,
                                              const std::string& phase, int64_t chunks) {
  Stmt s(db,
         "SELECT chunk, data FROM content_chunks WHERE launch = ? AND arg = ? AND phase = ? ORDER BY chunk");
  s.bind(1, launch).bind(2, arg).bind(3, phase);
  std::string out;
  int64_t next = 0;
  while (s.step()) {
    if (s.i64(0) != next) return std::nullopt;
    auto b = s.bytes(1);
    out.append(reinterpret_cast<const char*>(b.data()), b.size());
    ++next;
  }
  if (next != chunks) return std::nullopt;
  return out;
}

/// The smallest period p in 1, 2, 4, ..., 64 bytes such that the `n` bytes at `data` are their first p
/// bytes repeated (n a multiple of p, at least two repeats); 0 when there is none. Costs one pass over
/// the bytes for a periodic buffer, a few compares for any other.
inline uint64_t period_of(const std::byte* data, uint64_t n) {
  if (!data) return 0;
  for (uint64_t p = 1; p <= 64 && 2 * p <= n; p *= 2)
    if (n % p == 0 && std::memcmp(data, data + p, n - p) == 0) return p;
  return 0;
}

/// The `bytes` bytes a stored row stands for: `stored` itself (period 0), or `stored` (one period)
/// repeated. std::nullopt when the stored length does not match (a damaged trace).
inline std::optional<std::string> expand_contents(std::span<const std::byte> stored, int64_t period,
                                                  int64_t bytes) {
  const auto* p = reinterpret_cast<const char*>(stored.data());
  if (period <= 0) {
    if (static_cast<int64_t>(stored.size()) != bytes) return std::nullopt;
    return std::string(p, stored.size());
  }
  if (static_cast<int64_t>(stored.size()) != period || bytes % period != 0) return std::nullopt;
  std::string out(static_cast<size_t>(bytes), '\0');
  for (int64_t i = 0; i < bytes; i += period) std::memcpy(out.data() + i, p, static_cast<size_t>(period));
  return out;
}

}  // namespace tilescope::trace
