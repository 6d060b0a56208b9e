// Ctrl-C while the command works (a launch, an LLM request): a handler sets a flag that the work polls
// (the engine within a loop iteration of every running program, the LLM client within 20 ms), and the
// command exits 130, as a shell reports a command that SIGINT ended. Outside such work, SIGINT keeps
// its default action.
#pragma once

#include <atomic>
#include <csignal>

namespace tilescope::cli {

/// The flag SIGINT sets while a CancelOnSigint is alive.
std::atomic<bool>& interrupted();

/// While alive, SIGINT sets interrupted() instead of ending the process (unless SIGINT was ignored:
/// nohup, a background job).
class CancelOnSigint {
 public:
  CancelOnSigint();
  ~CancelOnSigint();
  CancelOnSigint(const CancelOnSigint&) = delete;
  CancelOnSigint& operator=(const CancelOnSigint&) = delete;

 private:
  struct sigaction old_ {};
  bool on_ = false;
};

}  // namespace tilescope::cli
