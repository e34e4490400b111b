// safetensors checkpoints: any bytes give tensors or an error naming what is wrong.
#include "frontend/nn/safetensors.h"
#include "fuzz/fuzz_check.h"

using namespace smelt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::map<std::string, std::string> metadata;
  Expected<nn::StateDict> state = nn::parseSafetensors(fuzz::asText(data, size), "fuzz.safetensors", &metadata);
  if (state) {
    for (const auto& [name, tensor] : *state)
      fuzz::require(tensor.byteSize() <= size, "no tensor larger than the file", name);
  }
  return 0;
}
