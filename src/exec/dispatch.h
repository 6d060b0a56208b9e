// Who observes what in one launch: the observers' Subscriptions (exec/events.h) turned into lists
// and tables at launch begin, so that delivering an event asks no observer anything.
//
// Observers are numbered by their position in `observers`; Program::state has one entry per
// observer. The per-kind lists hold those numbers. Ops and values are watched per Step::id and per
// slot of the plan, for the steps and slots the launch can reach.
#pragma once

#include <cstdint>
#include <vector>

#include "plan.h"
#include "tilescope/exec/events.h"

namespace tilescope::exec {

struct Dispatch {
  struct Watch {
    int observer;
    const void* tag;  // Subscription::ops's answer for the step's op
  };

  std::vector<Observer*> observers;
  unsigned observed = 0;  // union of the subscribed kinds
  std::vector<int> program, access, out_of_bounds, print, assert_;
  std::vector<int> transfer;  // observers of kOpResult
  // kOpBegin / kOpResult watchers of step `id`: watches[first[id] .. first[id + 1]), and per step
  // which of the two it has (what Program::run tests). Sized when someone subscribed to either kind.
  static constexpr uint8_t kBeginHook = 1, kResultHook = 2;
  std::vector<uint32_t> begin_first, result_first;
  std::vector<Watch> begin_watch, result_watch;
  std::vector<uint8_t> step_hooks;
  // Transfers: per slot, whether some observer watches it, and per entry of `transfer` which slots.
  std::vector<uint8_t> slot_any;
  std::vector<std::vector<uint8_t>> slot_watch;

  /// Register `o` with `sub` in the per-kind lists (not the op and value tables: the engine builds
  /// those from the plan). Returns the observer's number.
  int add(Observer* o, const Subscription& sub) {
    int i = static_cast<int>(observers.size());
    observers.push_back(o);
    unsigned k = sub.kinds;
    observed |= k;
    if (k & kProgram) program.push_back(i);
    if (k & kAccess) access.push_back(i);
    if (k & (kAccess | kOutOfBounds)) out_of_bounds.push_back(i);
    if (k & kPrint) print.push_back(i);
    if (k & kAssert) assert_.push_back(i);
    if (k & kOpResult) transfer.push_back(i);
    return i;
  }
};

}  // namespace tilescope::exec
