// Placement tables: crossovers, defaults, JSON and where the files live.
#include "runtime/placement/placement_table.h"

#include "codegen/cache/cache_dir.h"
#include "codegen/log.h"
#include "ir/support/input_files.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace smelt {

std::optional<int64_t> PlacementTable::crossoverOf(WorkKind kind) const {
  for (const KindCrossover& k : kinds) {
    if (k.kind == kind) return k.crossover;
  }
  return std::nullopt;
}

bool PlacementTable::matches(const DeviceDescription& description) const {
  return deviceName == description.name && driver == description.driver;
}

std::optional<int64_t> crossoverFrom(std::span<const CrossoverPoint> points) {
  // Walk down from the largest size while the device keeps winning; a device that wins only at
  // some middle size (noise, a cache effect) is not trusted with everything above it.
  std::optional<int64_t> crossover;
  for (auto it = points.rbegin(); it != points.rend(); ++it) {
    if (!(it->deviceSeconds < it->cpuSeconds)) break;
    crossover = it->amount;
  }
  return crossover;
}

std::optional<PlacementTable> defaultPlacementTable(const DeviceDescription& description) {
  if (description.kind != DeviceKind::kCuda && description.kind != DeviceKind::kHip) return std::nullopt;
  PlacementTable table;
  table.deviceId = description.id;
  table.deviceName = description.name;
  table.driver = description.driver;
  table.source = "built-in default (not measured)";
  // A launch plus the copies in and out costs ~20-50 us; a 2-core CPU streams ~4M f32 elements or
  // does ~50 MFLOP in about that time, so these are where a GPU starts to be worth the trip.
  table.kinds = {{WorkKind::kElementwise, {}, int64_t{1} << 22},
                 {WorkKind::kReduction, {}, int64_t{1} << 22},
                 {WorkKind::kMatmul, {}, int64_t{1} << 26},
                 {WorkKind::kConv, {}, int64_t{1} << 26}};
  return table;
}

std::string placementTableToJson(const PlacementTable& table) {
  nlohmann::json kinds = nlohmann::json::array();
  for (const KindCrossover& k : table.kinds) {
    nlohmann::json points = nlohmann::json::array();
    for (const CrossoverPoint& p : k.points) {
      points.push_back({{"amount", p.amount}, {"cpu_seconds", p.cpuSeconds}, {"device_seconds", p.deviceSeconds}});
    }
    kinds.push_back({{"kind", workKindName(k.kind)},
                     {"unit", workUnit(k.kind)},
                     {"crossover", k.crossover ? nlohmann::json(*k.crossover) : nlohmann::json(nullptr)},
                     {"points", std::move(points)}});
  }
  nlohmann::json j = {{"device", table.deviceId}, {"name", table.deviceName}, {"driver", table.driver},
                      {"source", table.source},   {"kinds", std::move(kinds)}};
  return j.dump(2) + "\n";
}

Expected<PlacementTable> placementTableFromJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return makeError("not a JSON object");
  auto stringField = [](const nlohmann::json& object, const char* name) -> Expected<std::string> {
    auto it = object.find(name);
    if (it == object.end() || !it->is_string()) return makeError("field '{}' is missing or not a string", name);
    return it->get<std::string>();
  };
  PlacementTable table;
  SMELT_TRY(table.deviceId, stringField(j, "device"));
  SMELT_TRY(table.deviceName, stringField(j, "name"));
  SMELT_TRY(table.driver, stringField(j, "driver"));
  SMELT_TRY(table.source, stringField(j, "source"));
  auto kinds = j.find("kinds");
  if (kinds == j.end() || !kinds->is_array()) return makeError("field 'kinds' is missing or not an array");
  for (const nlohmann::json& k : *kinds) {
    if (!k.is_object()) return makeError("an entry of 'kinds' is not an object");
    SMELT_TRY(std::string name, stringField(k, "kind"));
    std::optional<WorkKind> kind = parseWorkKind(name);
    if (!kind) return makeError("unknown work kind '{}'", name);
    KindCrossover entry{*kind, {}, std::nullopt};
    auto crossover = k.find("crossover");
    if (crossover == k.end() || !(crossover->is_null() || crossover->is_number_integer())) {
      return makeError("{}: 'crossover' is missing or not an integer or null", name);
    }
    if (!crossover->is_null()) entry.crossover = crossover->get<int64_t>();
    auto points = k.find("points");
    if (points == k.end() || !points->is_array()) return makeError("{}: 'points' is missing or not an array", name);
    for (const nlohmann::json& p : *points) {
      if (!p.is_object() || !p.contains("amount") || !p["amount"].is_number_integer() || !p.contains("cpu_seconds") ||
          !p["cpu_seconds"].is_number() || !p.contains("device_seconds") || !p["device_seconds"].is_number()) {
        return makeError("{}: a point lacks amount, cpu_seconds or device_seconds", name);
      }
      entry.points.push_back({p["amount"].get<int64_t>(), p["cpu_seconds"].get<double>(), p["device_seconds"].get<double>()});
    }
    table.kinds.push_back(std::move(entry));
  }
  return table;
}

std::string placementTablePath(const DeviceDescription& description) {
  const std::string dir = defaultCacheDir();
  if (dir.empty()) return {};
  std::string file = description.id;
  std::replace_if(file.begin(), file.end(), [](unsigned char c) { return !std::isalnum(c) && c != '-'; }, '-');
  return dir + "/placement/" + file + ".json";
}

Status savePlacementTable(const PlacementTable& table, const DeviceDescription& description) {
  const std::string path = placementTablePath(description);
  if (path.empty()) return makeError("no cache folder to store the placement table in (set SMELT_CACHE_DIR)");
  SMELT_CHECK_OK(createPrivateDir(path.substr(0, path.rfind('/'))));
  // Written beside and renamed over, so a reader never sees half a table (a name per process, so two
  // `smelt tune`s at once never write one file).
  const std::string temporary = fmt::format("{}.{}.tmp", path, getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << placementTableToJson(table);
    if (!out.flush()) return makeError("cannot write {}", temporary);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) return makeError("cannot rename {} to {}", temporary, path);
  return Status::success();
}

Expected<std::optional<PlacementTable>> loadPlacementTable(const DeviceDescription& description) {
  const std::string path = placementTablePath(description);
  if (path.empty()) return std::optional<PlacementTable>();
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return std::optional<PlacementTable>();
  // A regular file of a sane size: a FIFO or /dev/zero in its place would block or read forever.
  SMELT_TRY(std::string text, readInputFile(path, "a placement table", uint64_t{16} << 20));
  Expected<PlacementTable> table = placementTableFromJson(text);
  if (!table) return makeError("placement table {}: {}", path, table.error().message());
  if (!table->matches(description)) {
    logger().debug("placement: {} was measured on '{}' ({}), not '{}' ({}); ignored until `smelt tune` runs again",
                   path, table->deviceName, table->driver, description.name, description.driver);
    return std::optional<PlacementTable>();
  }
  return std::optional<PlacementTable>(std::move(*table));
}

}  // namespace smelt
