// SMELT_FAULTS parsing and the per-fault counters.
#include "runtime/device/fault_injection.h"

#include "codegen/log.h"

#include <charconv>
#include <cstdlib>
#include <vector>

namespace smelt {

namespace {

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (!text.empty()) {
    size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) break;
    text.remove_prefix(at + 1);
  }
  return parts;
}

}  // namespace

Status FaultInjector::configure(std::string_view spec) {
  int counts[kFaults] = {0, 0, 0};
  std::set<std::string, std::less<>> unsupported;
  for (std::string_view entry : split(spec, ',')) {
    if (entry.empty()) continue;
    size_t eq = entry.find('=');
    std::string_view key = entry.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? std::string_view("1") : entry.substr(eq + 1);
    if (key == "unsupported") {
      for (std::string_view op : split(value, '+')) {
        if (!op.empty()) unsupported.emplace(op);
      }
      continue;
    }
    int* slot = key == "oom" ? &counts[0] : key == "lost" ? &counts[1] : key == "stall" ? &counts[2] : nullptr;
    if (!slot) return makeError("SMELT_FAULTS: unknown fault '{}' in '{}' (oom, lost, stall, unsupported)", key, entry);
    if (value == "always") {
      *slot = kAlways;
      continue;
    }
    int n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || n < 0) {
      return makeError("SMELT_FAULTS: '{}' wants a count or 'always', got '{}'", key, value);
    }
    *slot = n;
  }
  std::lock_guard lock(mutex_);
  for (int i = 0; i < kFaults; ++i) counts_[i] = counts[i];
  unsupported_ = std::move(unsupported);
  any_ = counts[0] != 0 || counts[1] != 0 || counts[2] != 0;
  return Status::success();
}

bool FaultInjector::trigger(Fault fault) {
  if (!any_.load(std::memory_order_relaxed)) return false;
  auto& count = counts_[static_cast<int>(fault)];
  int n = count.load();
  while (true) {
    if (n == 0) return false;
    if (n == kAlways || count.compare_exchange_weak(n, n - 1)) break;
  }
  ++injected_[static_cast<int>(fault)];
  return true;
}

bool FaultInjector::unsupported(std::string_view opName) const {
  std::lock_guard lock(mutex_);
  return !unsupported_.empty() && unsupported_.find(opName) != unsupported_.end();
}

int FaultInjector::injected(Fault fault) const { return injected_[static_cast<int>(fault)].load(); }

FaultInjector& faultInjector() {
  static FaultInjector* injector = [] {
    auto* f = new FaultInjector();  // never destroyed: devices may check it during exit
    if (const char* env = std::getenv("SMELT_FAULTS"); env && *env) {
      if (Status s = f->configure(env); !s.ok()) {
        logger().error("{} (ignored)", s.error().message());
      } else {
        logger().warn("SMELT_FAULTS={}: injecting device faults", env);
      }
    }
    return f;
  }();
  return *injector;
}

}  // namespace smelt
