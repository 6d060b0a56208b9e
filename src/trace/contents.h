// Argument contents in the trace: a buffer that repeats a short pattern (zeros, a fill value, the
// uninitialized-memory sentinel of a fresh torch.empty) is stored as the pattern and its period
// (docs/trace-format.md, `contents.period`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>

namespace tilescope::trace {

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
