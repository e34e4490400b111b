// The kernel description's text parser (golden tests, `smelt kernel`): any bytes parse or give an
// error, and a parsed kernel prints to text that parses back and prints identically.
#include "codegen/kernel_parser.h"
#include "fuzz/fuzz_check.h"

using namespace smelt;
using namespace smelt::codegen;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Expected<Kernel> kernel = parseKernel(fuzz::asText(data, size));
  if (!kernel) return 0;
  std::string text = printKernel(*kernel);
  Expected<Kernel> again = parseKernel(text);
  fuzz::require(again.ok(), "a printed kernel parses", text, again ? "" : again.error().message());
  std::string textAgain = printKernel(*again);
  fuzz::require(text == textAgain, "print(parse(print(k))) == print(k)", text, textAgain);
  return 0;
}
