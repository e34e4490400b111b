// IDX arrays (MNIST's format): any bytes give a tensor whose data came from the file, or an error.
#include "frontend/data/idx.h"
#include "fuzz/fuzz_check.h"

using namespace smelt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Expected<Tensor> tensor = data::parseIdx(fuzz::asText(data, size), "fuzz.idx");
  if (tensor) fuzz::require(tensor->byteSize() <= size, "the tensor's bytes come from the file");
  return 0;
}
