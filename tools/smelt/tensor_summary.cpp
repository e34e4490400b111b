// CLI helpers.
#include "tools/smelt/tensor_summary.h"

#include "ir/dims.h"

#include "frontend/npy.h"
#include "ir/printer.h"

#include <cctype>

namespace smelt::cli {

Expected<TensorMap> readFeeds(const Graph& graph, const std::vector<std::string>& options, bool requireAll) {
  TensorMap feeds;
  for (const std::string& option : options) {
    size_t eq = option.find('=');
    if (eq == std::string::npos || eq == 0) return makeError("--input '{}' must look like NAME=PATH.npy", option);
    std::string name = option.substr(0, eq);
    std::string path = option.substr(eq + 1);
    const Value* v = graph.findInput(name);
    if (!v) v = graph.findParameter(name);
    if (!v) return makeError("--input '{}': the graph has no input or parameter named '{}'", option, name);
    SMELT_TRY(Tensor t, readNpy(path));
    if (!typeAccepts(v->type(), t.type())) {
      return makeError("input '{}' expects {}, but '{}' holds {}", name, v->type().toString(), path, t.type().toString());
    }
    feeds[name] = std::move(t);
  }
  for (const Value* v : graph.inputs()) {
    if (requireAll && !feeds.count(v->name())) {
      return makeError("input '{}' ({}) is missing: pass --input {}=PATH.npy", v->name(), v->type().toString(), v->name());
    }
  }
  return feeds;
}

Expected<TensorMap> readInputArrays(const std::vector<std::string>& options) {
  TensorMap arrays;
  for (const std::string& option : options) {
    size_t eq = option.find('=');
    if (eq == std::string::npos || eq == 0) return makeError("--input '{}' must look like NAME=PATH.npy", option);
    SMELT_TRY(Tensor t, readNpy(option.substr(eq + 1)));
    arrays[option.substr(0, eq)] = std::move(t);
  }
  return arrays;
}

std::string sanitizeFileName(std::string_view name) {
  std::string out;
  for (char c : name) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

std::string summarizeTensor(const Tensor& tensor, int maxValues) {
  std::string values;
  int64_t n = std::min<int64_t>(tensor.numel(), maxValues);
  for (int64_t i = 0; i < n; ++i) {
    if (i) values += ", ";
    if (isFloat(tensor.dtype())) {
      values += fmt::format("{:.6g}", tensor.getDouble(i));
    } else if (isUnsignedInt(tensor.dtype())) {
      values += fmt::format("{}", static_cast<uint64_t>(tensor.getInt(i)));
    } else {
      values += fmt::format("{}", tensor.getInt(i));
    }
  }
  if (tensor.numel() > n) values += ", ...";
  return fmt::format("{} [{}]", tensor.type().toString(), values);
}

}  // namespace smelt::cli
