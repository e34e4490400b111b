// The IR text parser: any bytes parse to a verified graph or to an error, and a graph that parsed
// prints to text that parses back to a graph printing identically (the printer/parser round trip).
#include "fuzz/fuzz_check.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

using namespace smelt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ParseOptions options;
  // file("...") literals resolve against a folder that does not exist: the fuzzer reads no files.
  options.externalDataDir = "/nonexistent/smelt-fuzz";
  Expected<Graph> graph = parseGraph(fuzz::asText(data, size), options);
  if (!graph) return 0;
  fuzz::require(verifyGraph(*graph).ok(), "a parsed graph verifies");
  std::string text = toText(*graph);
  Expected<Graph> again = parseGraph(text, options);
  fuzz::require(again.ok(), "printed IR parses", text, again ? "" : again.error().message());
  std::string textAgain = toText(*again);
  fuzz::require(text == textAgain, "print(parse(print(g))) == print(g)", text, textAgain);
  return 0;
}
