// The profiler's summary (see include/tilescope/report/profile.h).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "tilescope/report/profile.h"

namespace tilescope::report {

namespace {

using nlohmann::json;

std::string bytes_str(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.1f} {}", b, unit[u]);
}

std::string time_str(double s) {
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.2f} us", s * 1e6);
  return fmt::format("{:.1f} ns", s * 1e9);
}

std::string count_str(double n) {
  if (n >= 1e12) return fmt::format("{:.2f} T", n / 1e12);
  if (n >= 1e9) return fmt::format("{:.2f} G", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.2f} M", n / 1e6);
  if (n >= 1e4) return fmt::format("{:.1f} K", n / 1e3);
  return fmt::format("{:.0f}", n);
}

double num(const json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

struct Kernel {
  std::string name;
  int launches = 0;
  int64_t programs = 0;
  double mem[3][4] = {};  // kind -> bytes, bytes_all_lanes, sectors, requests
  double dram_read = 0, dram_written = 0, memory_s = 0, compute_s = 0, seconds = 0;
  std::map<std::string, double> flops;
  std::string gpu;
  struct Line {
    std::string file, source;
    int line = 0;
    double bytes = 0, sectors = 0, flops = 0, seconds = 0;
    std::vector<std::string> ops;
  };
  std::map<std::pair<std::string, int>, Line> lines;
  std::map<std::string, double> trips;  // loop "file:line" -> trips
};

/// The NKI launches' part of the summary (their reports have "kind": "nki"; nki/nki.h Kernel::profile).
std::string nki_text(const std::vector<const json*>& launches, int top) {
  struct Nki {
    std::string name, target;
    int launches = 0;
    int64_t programs = 0;
    double seconds = 0, serial = 0, flops = 0;
    std::map<std::string, std::pair<double, double>> engines;  // instructions, busy ns
    std::map<std::string, std::pair<double, double>> dma;      // transfers, bytes
    struct Line {
      std::string source;
      double ns = 0, instructions = 0, dma_bytes = 0;
    };
    std::map<std::pair<std::string, int>, Line> lines;
  };
  std::vector<Nki> kernels;
  for (const json* L : launches) {
    const std::string name = L->value("kernel", std::string("?"));
    auto it = std::find_if(kernels.begin(), kernels.end(), [&](const Nki& k) { return k.name == name; });
    if (it == kernels.end()) {
      it = kernels.insert(kernels.end(), Nki{});
      it->name = name;
    }
    it->target = L->value("target", std::string("?"));
    ++it->launches;
    it->programs += L->value("programs", int64_t{0});
    it->seconds += num(L->value("estimate", json::object()), "seconds");
    it->serial += num(L->value("estimate", json::object()), "serial_seconds");
    it->flops += num(L->value("flops", json::object()), "matmul");
    const json engines = L->value("engines", json::object()), dma = L->value("dma", json::object());
    for (auto& [e, v] : engines.items()) {
      it->engines[e].first += num(v, "instructions");
      it->engines[e].second += num(v, "busy_ns");
    }
    for (auto& [d, v] : dma.items()) {
      it->dma[d].first += num(v, "transfers");
      it->dma[d].second += std::max(num(v, "read_bytes"), num(v, "written_bytes"));
    }
    const json lines = L->value("lines", json::array());
    for (const json& l : lines) {
      auto& x = it->lines[{l.value("file", std::string()), l.value("line", 0)}];
      x.source = l.value("source", std::string());
      x.ns += num(l, "busy_ns");
      x.instructions += num(l, "instructions");
      x.dma_bytes += num(l, "dma_bytes");
    }
  }
  std::string out = fmt::format(
      "tilescope profile: {} NKI launch(es) of {} kernel(s); an estimated NeuronCore timeline (README \"NKI "
      "profile\")\n",
      launches.size(), kernels.size());
  for (const Nki& K : kernels) {
    out += fmt::format("\nkernel {} (NKI, {}): {} launch(es), {} program(s)\n", K.name, K.target, K.launches,
                       K.programs);
    std::string counts, busy;
    for (const char* e : {"tensor", "vector", "scalar", "gpsimd", "dma"}) {
      auto it = K.engines.find(e);
      const auto [n, ns] = it == K.engines.end() ? std::pair<double, double>{0, 0} : it->second;
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", e, count_str(n));
      if (ns > 0)
        busy += fmt::format("{}{} {}{}", busy.empty() ? "" : ", ", e, time_str(ns * 1e-9),
                            std::string_view(e) == "dma" ? " (summed over its 16 queues)" : "");
    }
    out += "  instructions: " + counts + "\n";
    if (!K.dma.empty()) {
      std::string d;
      for (const auto& [dir, v] : K.dma) {
        std::string label = dir;
        if (const size_t at = label.find("_to_"); at != std::string::npos) label.replace(at, 4, " -> ");
        d += fmt::format("{}{} {} in {} transfer(s)", d.empty() ? "" : ", ", label, bytes_str(v.second),
                         count_str(v.first));
      }
      out += "  DMA: " + d + "\n";
    }
    if (K.flops > 0) out += fmt::format("  matmul FLOPs: {}\n", count_str(K.flops));
    out +=
        fmt::format("  estimated time: {} (the slowest program of each launch, summed); engines busy: {}\n",
                    time_str(K.seconds), busy.empty() ? std::string("none") : busy);
    if (K.programs > K.launches)  // the estimate gives each program a NeuronCore of its own
      out += fmt::format(
          "  with every program on a NeuronCore of its own; on one NeuronCore, one after another: {}\n",
          time_str(K.serial));
    std::vector<std::pair<std::pair<std::string, int>, Nki::Line>> ls(K.lines.begin(), K.lines.end());
    std::stable_sort(ls.begin(), ls.end(),
                     [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    if (ls.size() > static_cast<size_t>(std::max(top, 0))) ls.resize(static_cast<size_t>(std::max(top, 0)));
    if (!ls.empty())
      out +=
          "  hottest lines (engine time summed over the line's instructions, which overlap others'; "
          "instructions; DMA bytes):\n";
    for (const auto& [key, l] : ls) {
      std::string where = key.first.empty() ? std::string("?") : fmt::format("{}:{}", key.first, key.second);
      if (const size_t slash = where.rfind('/'); slash != std::string::npos) where = where.substr(slash + 1);
      std::string src = l.source;
      src.erase(0, src.find_first_not_of(" \t"));
      if (src.size() > 60) src = src.substr(0, 57) + "...";
      out += fmt::format("    {:>10} {:>9} {:>10}  {:<22} {}\n", time_str(l.ns * 1e-9),
                         count_str(l.instructions), bytes_str(l.dma_bytes), where, src);
    }
  }
  return out;
}

}  // namespace

json profile_document(const json& launches) { return {{"version", 1}, {"launches", launches}}; }

std::string profile_to_text(const json& launches, int top) {
  if (!launches.is_array() || launches.empty()) return "";
  std::vector<const json*> nki;
  for (const json& L : launches)
    if (L.is_object() && L.value("kind", std::string()) == "nki") nki.push_back(&L);
  std::string nki_part = nki.empty() ? std::string() : nki_text(nki, top);
  if (nki.size() == launches.size()) return nki_part;
  std::vector<Kernel> kernels;
  for (const json& L : launches) {
    if (L.is_object() && L.value("kind", std::string()) == "nki") continue;
    const std::string name = L.value("kernel", std::string("?"));
    auto it = std::find_if(kernels.begin(), kernels.end(), [&](const Kernel& k) { return k.name == name; });
    if (it == kernels.end()) {
      kernels.push_back(Kernel{});
      it = kernels.end() - 1;
      it->name = name;
    }
    Kernel& K = *it;
    K.launches++;
    K.programs += L.value("programs", int64_t{0});
    const json mem = L.value("memory", json::object());
    const char* kinds[3] = {"load", "store", "atomic"};
    for (int k = 0; k < 3; ++k) {
      const json m = mem.value(kinds[k], json::object());
      K.mem[k][0] += num(m, "bytes");
      K.mem[k][1] += num(m, "bytes_all_lanes");
      K.mem[k][2] += num(m, "sectors");
      K.mem[k][3] += num(m, "requests");
    }
    K.dram_read += num(mem.value("read", json::object()), "dram_bytes");
    K.dram_written += num(mem.value("written", json::object()), "dram_bytes");
    const json flops = L.value("flops", json::object());
    for (auto& [p, v] : flops.items()) K.flops[p] += v.get<double>();
    const json roof = L.value("roofline", json::object());
    K.memory_s += num(roof, "memory_seconds");
    K.compute_s += num(roof, "compute_seconds");
    K.seconds += num(roof, "seconds");
    K.gpu = roof.value("gpu", std::string("?"));
    for (const json& l : L.value("lines", json::array())) {
      auto key = std::make_pair(l.value("file", std::string()), l.value("line", 0));
      Kernel::Line& x = K.lines[key];
      x.file = key.first;
      x.line = key.second;
      x.source = l.value("source", std::string());
      x.bytes += num(l, "bytes");
      x.sectors += num(l, "sectors");
      x.flops += num(l, "flops");
      x.seconds += num(l, "cost_seconds");
      for (const json& o : l.value("ops", json::array()))
        if (std::find(x.ops.begin(), x.ops.end(), o.get<std::string>()) == x.ops.end())
          x.ops.push_back(o.get<std::string>());
    }
    for (const json& s : L.value("sites", json::array()))
      if (s.value("kind", std::string()) == "loop") {
        const json site = s.value("site", json::object());
        std::string file = site.value("file", std::string("?"));
        if (const size_t slash = file.rfind('/'); slash != std::string::npos) file = file.substr(slash + 1);
        K.trips[fmt::format("{}:{}", file, site.value("line", 0))] += num(s, "trips");
      }
  }
  std::string out = fmt::format("tilescope profile: {} launch(es) of {} kernel(s); roofline on {}\n",
                                launches.size() - nki.size(), kernels.size(), kernels.front().gpu);
  for (const Kernel& K : kernels) {
    out += fmt::format("\nkernel {}: {} launch(es), {} program(s)\n", K.name, K.launches, K.programs);
    const char* label[3] = {"loads", "stores", "atomics"};
    for (int k = 0; k < 3; ++k) {
      const double* m = K.mem[k];
      if (m[1] == 0) continue;
      out += fmt::format(
          "  {:<8} {:>10}  mask efficiency {:5.1f}%  {:>9} sectors  coalescing {:5.1f}%  {} requests\n",
          label[k], bytes_str(m[0]), 100.0 * m[0] / m[1], count_str(m[2]),
          m[2] > 0 ? 100.0 * m[0] / (m[2] * 32) : 100.0, count_str(m[3]));
    }
    out += fmt::format("  DRAM estimate (distinct 64-byte blocks): read {}, written {}\n",
                       bytes_str(K.dram_read), bytes_str(K.dram_written));
    if (!K.flops.empty()) {
      std::string f;
      for (auto& [p, v] : K.flops) f += fmt::format("{}{} {}", f.empty() ? "" : ", ", p, count_str(v));
      out += "  FLOPs: " + f + "\n";
    }
    if (!K.trips.empty()) {
      std::string t;
      for (auto& [w, v] : K.trips)
        t += fmt::format("{}{} ({} trips)", t.empty() ? "" : ", ", w, count_str(v));
      out += "  loops: " + t + "\n";
    }
    const double flops = [&] {
      double s = 0;
      for (auto& [p, v] : K.flops) s += v;
      return s;
    }();
    const double dram = K.dram_read + K.dram_written;
    out += fmt::format(
        "  roofline {}: {} ({}-bound; memory {}, compute {}); arithmetic intensity {:.2f} FLOP/B\n", K.gpu,
        time_str(K.seconds), K.memory_s >= K.compute_s ? "memory" : "compute", time_str(K.memory_s),
        time_str(K.compute_s), dram > 0 ? flops / dram : 0.0);
    std::vector<const Kernel::Line*> ls;
    for (auto& [_, l] : K.lines) ls.push_back(&l);
    std::stable_sort(ls.begin(), ls.end(), [](auto* a, auto* b) {
      return std::make_tuple(a->seconds, a->bytes, a->flops) >
             std::make_tuple(b->seconds, b->bytes, b->flops);
    });
    if (ls.size() > static_cast<size_t>(std::max(top, 0))) ls.resize(static_cast<size_t>(std::max(top, 0)));
    if (!ls.empty())
      out +=
          "  hottest lines (cost: their sectors at DRAM bandwidth + FLOPs at peak; bytes of active lanes; "
          "sectors; FLOPs):\n";
    for (const Kernel::Line* l : ls) {
      std::string where = l->file.empty() ? std::string("?") : fmt::format("{}:{}", l->file, l->line);
      const size_t slash = where.rfind('/');
      if (slash != std::string::npos) where = where.substr(slash + 1);
      std::string src = l->source;
      src.erase(0, src.find_first_not_of(" \t"));
      if (src.size() > 60) src = src.substr(0, 57) + "...";
      out += fmt::format("    {:>10} {:>10} {:>9} {:>9}  {:<22} {}\n", time_str(l->seconds),
                         bytes_str(l->bytes), count_str(l->sectors), count_str(l->flops), where, src);
    }
  }
  return nki_part.empty() ? out : out + "\n" + nki_part;
}

}  // namespace tilescope::report
