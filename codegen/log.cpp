// The "smelt" logger: stderr, level from SMELT_LOG.
#include "codegen/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

namespace smelt {

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = std::make_shared<spdlog::logger>("smelt", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_pattern("[smelt %l] %v");
    spdlog::level::level_enum level = spdlog::level::warn;
    if (const char* env = std::getenv("SMELT_LOG"); env && *env) level = spdlog::level::from_str(env);
    l->set_level(level);
    return l;
  }();
  return *instance;
}

}  // namespace smelt
