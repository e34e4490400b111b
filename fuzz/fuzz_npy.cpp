// .npy arrays: any bytes give a tensor or an error, and a tensor read serializes to bytes that read
// back to the same tensor.
#include <cstring>

#include "frontend/npy.h"
#include "fuzz/fuzz_check.h"

using namespace smelt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Expected<Tensor> tensor = parseNpy(fuzz::asText(data, size), "fuzz.npy");
  if (!tensor) return 0;
  Expected<std::string> bytes = serializeNpy(*tensor);
  if (!bytes) return 0;  // a dtype numpy has no name for cannot come from a file, but is not this target's
  Expected<Tensor> again = parseNpy(*bytes, "serialized.npy");
  fuzz::require(again.ok(), "a serialized array reads back", *bytes, again ? "" : again.error().message());
  fuzz::require(again->type() == tensor->type(), "the type survives", tensor->type().toString(),
                again->type().toString());
  // An empty tensor has no storage (raw() is null), and memcmp must not see a null pointer.
  fuzz::require(tensor->byteSize() == 0 || std::memcmp(again->raw(), tensor->raw(), tensor->byteSize()) == 0,
                "the bytes survive");
  return 0;
}
