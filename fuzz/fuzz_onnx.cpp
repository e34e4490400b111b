// The ONNX importer: any bytes give a verified graph or an error (importOnnxBytes runs the verifier
// on what it built; the fuzzer checks it again), within the fuzzer's memory limit.
#include "frontend/onnx/onnx_import.h"
#include "fuzz/fuzz_check.h"
#include "ir/verifier.h"

using namespace smelt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes = fuzz::asText(data, size);
  (void)inspectOnnxBytes(bytes, "fuzz.onnx");
  // External data resolves against a folder that does not exist: the fuzzer reads no files.
  Expected<Graph> graph = importOnnxBytes(bytes, "/nonexistent/smelt-fuzz", "fuzz.onnx");
  if (graph) fuzz::require(verifyGraph(*graph).ok(), "an imported graph verifies");
  (void)importOnnxTensorBytes(bytes, "/nonexistent/smelt-fuzz", "fuzz.pb");
  return 0;
}
