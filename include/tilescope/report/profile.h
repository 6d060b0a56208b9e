// tilescope/report: the profiler's per-launch reports (analysis/profile.h) as a terminal summary and
// as the `tilescope profile --json` document (schema: README "Profile JSON").
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tilescope::report {

/// The summary of `launches` (a JSON array of per-launch profile reports, in launch order): per kernel
/// (launches of one kernel summed), bytes loaded and stored with mask efficiency, sectors and
/// coalescing, the DRAM estimate, FLOPs by precision, the roofline, and its `top` hottest Python lines
/// (by modelled time). Empty string when there are no launches.
std::string profile_to_text(const nlohmann::json& launches, int top = 5);

/// {"version": 1, "launches": launches}: what `tilescope profile --json` writes.
nlohmann::json profile_document(const nlohmann::json& launches);

}  // namespace tilescope::report
