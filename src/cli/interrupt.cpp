#include "interrupt.h"

namespace tilescope::cli {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) { g_interrupted.store(true); }

}  // namespace

std::atomic<bool>& interrupted() { return g_interrupted; }

CancelOnSigint::CancelOnSigint() {
  sigaction(SIGINT, nullptr, &old_);
  if (old_.sa_handler == SIG_IGN) return;  // nohup, a background job: stays ignored
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  on_ = true;
}

CancelOnSigint::~CancelOnSigint() {
  if (on_) sigaction(SIGINT, &old_, nullptr);
}

}  // namespace tilescope::cli
