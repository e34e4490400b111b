// nvidiaLibraryCandidates (see nvidia_libraries.h).
#include "runtime/cuda/nvidia_libraries.h"

#include <glob.h>

#include <cstdlib>

namespace smelt::cuda {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string();
}

void globInto(const std::string& pattern, std::vector<std::string>& out) {
  glob_t found{};
  if (glob(pattern.c_str(), 0, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) out.emplace_back(found.gl_pathv[i]);
  }
  globfree(&found);
}

}  // namespace

std::vector<std::string> nvidiaLibraryCandidates(const std::string& component,
                                                 const std::vector<std::string>& sonames) {
  std::vector<std::string> out(sonames.begin(), sonames.end());
  std::vector<std::string> toolkits;
  if (std::string home = env("CUDA_HOME"); !home.empty()) toolkits.push_back(home + "/lib64");
  toolkits.push_back("/usr/local/cuda/lib64");
  for (const std::string& dir : toolkits) {
    for (const std::string& so : sonames) out.push_back(dir + "/" + so);
  }
  // Python prefixes whose site-packages may hold the wheels.
  std::vector<std::string> prefixes;
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    if (std::string p = env(var); !p.empty()) prefixes.push_back(p + "/lib/python3*/site-packages");
  }
  if (std::string home = env("HOME"); !home.empty()) prefixes.push_back(home + "/.local/lib/python3*/site-packages");
  for (const char* p : {"/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
                        "/usr/lib/python3/dist-packages", "/opt/conda/lib/python3*/site-packages"}) {
    prefixes.emplace_back(p);
  }
  for (const std::string& prefix : prefixes) {
    for (const std::string& folder : {component, std::string("cu13"), std::string("cu12")}) {
      for (const std::string& so : sonames) globInto(prefix + "/nvidia/" + folder + "/lib/" + so, out);
    }
  }
  return out;
}

}  // namespace smelt::cuda
