// ONNX backend node-test conformance: imports every DIR/test_*/model.onnx whose op types the importer
// maps, runs each test_data_set_* on a backend (--backend; the reference interpreter by default) and
// compares with ONNX's tolerances
// (rtol 1e-3, atol 1e-7; NaN equals NaN; integers and bools exact). Tests using an unmapped op are
// skipped and counted; tests listed in known_unsupported.txt must fail (a passing one is an error, so
// the list stays true).
//
//   smelt_onnx_conformance DIR/node [--known FILE] [--filter SUBSTRING] [--every N] [--verbose]
// --every N runs every Nth test in name order (CI's budget; the known list is still checked whole).
#include "frontend/model_executable.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/interpreter.h"
#include "runtime/exec/executable.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using namespace smelt;

namespace {

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;

std::string readBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// "test_name  # reason" per line; blank lines and lines starting with '#' are ignored.
std::map<std::string, std::string> readKnownList(const std::string& path, bool& ok) {
  std::map<std::string, std::string> known;
  std::ifstream in(path);
  ok = static_cast<bool>(in);
  std::string line;
  while (std::getline(in, line)) {
    size_t hash = line.find('#');
    std::string reason = hash == std::string::npos ? "" : line.substr(hash + 1);
    std::string name = line.substr(0, hash);
    name.erase(std::remove_if(name.begin(), name.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
               name.end());
    if (!name.empty()) known[name] = reason;
  }
  return known;
}

// Empty when equal, else the first mismatch.
std::string compare(const Tensor& got, const Tensor& want, std::string_view output) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return fmt::format("output '{}': got {}, expected {}", output, got.type().toString(), want.type().toString());
  }
  for (int64_t i = 0; i < want.numel(); ++i) {
    if (isFloat(want.dtype())) {
      double g = got.getDouble(i), w = want.getDouble(i);
      if (std::isnan(w) && std::isnan(g)) continue;
      if (std::isinf(w) && g == w) continue;
      if (!(std::fabs(g - w) <= kAtol + kRtol * std::fabs(w))) {
        return fmt::format("output '{}' element {}: got {}, expected {}", output, i, g, w);
      }
    } else if (got.getInt(i) != want.getInt(i)) {
      return fmt::format("output '{}' element {}: got {}, expected {}", output, i, got.getInt(i), want.getInt(i));
    }
  }
  return {};
}

std::vector<fs::path> sortedDirs(const fs::path& dir, std::string_view prefix) {
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory() && entry.path().filename().string().rfind(prefix, 0) == 0) dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// ONNX 1.12's test data stores bfloat16 tensors as their uint16 bit patterns: read those as bf16.
Tensor asDeclared(Tensor t, const std::optional<DType>& declared) {
  if (declared == DType::bf16 && t.dtype() == DType::u16) {
    auto bf = Tensor::fromBytes(TensorType{DType::bf16, t.shape()}, t.bytes());
    if (bf.ok()) return *bf;
  }
  return t;
}

// Runs one test folder; empty on success, else the first error or mismatch. With `byValue`, the model
// goes through ModelExecutable as a user's would (compiled per value of the inputs it needs static,
// its fed shapes binding its symbolic dimensions) instead of being imported with every fed value.
int compiledByValue = 0;  // tests whose model compiled per value of an input (--by-value)

std::string runTest(const fs::path& dir, const OnnxModelInfo& info, const std::string& modelBytes,
                    const std::string& backend, bool byValue) {
  auto dataSets = sortedDirs(dir, "test_data_set_");
  if (dataSets.empty()) return "no test_data_set_* folders";
  std::unique_ptr<ModelExecutable> model;
  if (byValue) {
    auto loaded = ModelExecutable::load((dir / "model.onnx").string(), {.device = backend});
    if (!loaded.ok()) return loaded.error().message();
    model = std::move(*loaded);
  }
  for (const fs::path& ds : dataSets) {
    OnnxImportOptions options;
    TensorMap feeds;
    for (size_t i = 0;; ++i) {
      fs::path file = ds / fmt::format("input_{}.pb", i);
      if (!fs::exists(file)) break;
      if (i >= info.inputs.size()) return fmt::format("{} has no matching graph input", file.string());
      auto t = importOnnxTensorFile(file.string());
      if (!t.ok()) return t.error().message();
      Tensor feed = asDeclared(*t, info.inputDTypes[i]);
      // The fed shape wins over the declared one (ONNX semantics; a few tests declare other shapes).
      options.inputShapes[info.inputs[i]] = feed.shape();
      options.staticInputValues[info.inputs[i]] = feed;
      feeds[info.inputs[i]] = std::move(feed);
    }
    std::optional<Graph> imported;
    Expected<std::vector<Tensor>> outputs = std::vector<Tensor>{};
    if (model) {
      outputs = model->run(feeds);
    } else {
      auto graph = importOnnxBytes(modelBytes, dir.string(), (dir / "model.onnx").string(), options);
      if (!graph.ok()) return graph.error().message();
      imported = std::move(*graph);
      outputs = runOnce(*imported, feeds, backend);
    }
    if (!outputs.ok()) return outputs.error().message();
    const Graph& graph = model ? model->last().graph() : *imported;
    if (model && !model->valueInputs().empty() && ds == dataSets.front()) ++compiledByValue;
    // The executable's graph ends with its index checks' flags (passes/index_checks.h): the outputs
    // returned are the model's.
    for (size_t i = 0; i < outputs->size(); ++i) {
      fs::path file = ds / fmt::format("output_{}.pb", i);
      if (!fs::exists(file)) return fmt::format("{} is missing", file.string());
      auto want = importOnnxTensorFile(file.string());
      if (!want.ok()) return want.error().message();
      Tensor expected = asDeclared(*want, i < info.outputDTypes.size() ? info.outputDTypes[i] : std::nullopt);
      std::string mismatch = compare((*outputs)[i], expected, graph.outputs()[i].name);
      if (!mismatch.empty()) return fmt::format("{}: {}", ds.filename().string(), mismatch);
    }
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  std::string root, knownPath, filter, backendName = "reference";
  bool verbose = false, byValue = false;
  int every = 1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--known" && i + 1 < argc) {
      knownPath = argv[++i];
    } else if (arg == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else if (arg == "--backend" && i + 1 < argc) {
      backendName = argv[++i];
    } else if (arg == "--every" && i + 1 < argc) {
      every = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--by-value") {
      byValue = true;
    } else if (arg == "--verbose" || arg == "-v") {
      verbose = true;
    } else {
      root = arg;
    }
  }
  if (root.empty()) {
    fmt::print(stderr, "usage: smelt_onnx_conformance DIR/node [--backend NAME] [--by-value] [--known FILE] [--filter SUBSTRING] [--every N] [--verbose]\n");
    return 2;
  }
  if (byValue && backendName == "reference") {
    fmt::print(stderr, "--by-value compiles: give a --backend other than reference\n");
    return 2;
  }
  if (std::vector<std::string> names = backendNames();
      std::find(names.begin(), names.end(), backendName) == names.end()) {
    fmt::print(stderr, "unknown backend '{}' (known: {})\n", backendName, fmt::join(names, ", "));
    return 2;
  }
  std::map<std::string, std::string> known;
  if (!knownPath.empty()) {
    bool ok = false;
    known = readKnownList(knownPath, ok);
    if (!ok) {
      fmt::print(stderr, "cannot read {}\n", knownPath);
      return 2;
    }
  }
  auto tests = sortedDirs(root, "test_");
  if (tests.empty()) {
    fmt::print(stderr, "no test_* folders under {}\n", root);
    return 2;
  }
  int passed = 0, failed = 0, skipped = 0, excluded = 0;
  std::map<std::string, int> unmappedOps;
  std::set<std::string> seen;
  int index = -1, sampledOut = 0;
  for (const fs::path& dir : tests) {
    std::string name = dir.filename().string();
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    seen.insert(name);
    if (++index % every != 0) {
      ++sampledOut;
      continue;
    }
    std::string bytes = readBytes(dir / "model.onnx");
    auto info = inspectOnnxBytes(bytes, (dir / "model.onnx").string());
    if (!info.ok()) {
      ++failed;
      fmt::print("FAIL {}: {}\n", name, info.error().message());
      continue;
    }
    std::set<std::string> missing;
    for (const std::string& op : info->opTypes) {
      if (!onnxOpSupported(op)) missing.insert(op);
    }
    if (!missing.empty()) {
      ++skipped;
      for (const std::string& op : missing) ++unmappedOps[op];
      if (verbose) fmt::print("skip {}: {}\n", name, fmt::join(missing, ", "));
      continue;
    }
    std::string error;
    try {
      error = runTest(dir, *info, bytes, backendName, byValue);
    } catch (const std::exception& e) {
      error = fmt::format("exception: {}", e.what());
    }
    auto k = known.find(name);
    if (k != known.end()) {
      if (error.empty()) {
        ++failed;
        fmt::print("FAIL {}: passes but is listed in known_unsupported.txt (remove it from the list)\n", name);
      } else {
        ++skipped;
        ++excluded;
        if (verbose) fmt::print("excluded {}: {}\n           ({})\n", name, k->second, error);
      }
      continue;
    }
    if (error.empty()) {
      ++passed;
      if (verbose) fmt::print("ok   {}\n", name);
    } else {
      ++failed;
      fmt::print("FAIL {}: {}\n", name, error);
    }
  }
  if (filter.empty()) {
    for (const auto& [name, reason] : known) {
      if (!seen.count(name)) {
        ++failed;
        fmt::print("FAIL {}: listed in known_unsupported.txt but no such test exists\n", name);
      }
    }
  }
  std::vector<std::pair<std::string, int>> ops(unmappedOps.begin(), unmappedOps.end());
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  std::vector<std::string> parts;
  for (const auto& [op, count] : ops) parts.push_back(fmt::format("{} ({})", op, count));
  fmt::print("skipped {} tests using ops the importer does not map; op types (tests): {}\n", skipped - excluded,
             fmt::join(parts, ", "));
  fmt::print("excluded {} in-scope tests listed in known_unsupported.txt\n", excluded);
  if (byValue) {
    fmt::print("{} tests compiled their model per value of an input it needs static (a Reshape's shape, axes, "
               "pads, bounds given as inputs)\n", compiledByValue);
  }
  if (every > 1) fmt::print("ran one test in {} (--every): {} others not run\n", every, sampledOut);
  fmt::print("onnx conformance: {} passed, {} failed, {} skipped\n", passed, failed, skipped);
  return failed == 0 ? 0 : 1;
}
