// Golden kernel-pass tests: tests/codegen/kernel/passes/<pass>/<case>.kernel (first line
// `// RUN: --kernel-passes=<pipeline>`, then a kernel as printKernel writes it; `smelt kernels FILE
// --kernel-passes none` prints one as lowered) is parsed, run through the pipeline, printed, and
// compared exactly with the sibling <case>.expected.kernel. The result must compute what the input
// computed: both run on the kernel interpreter over the same random buffers. SMELT_UPDATE_GOLDEN=1
// rewrites the .expected.kernel files (review the diff before committing).
#include "codegen/kernel_interpreter.h"
#include "codegen/kernel_parser.h"
#include "codegen/kernel_passes.h"
#include "tests/codegen/kernel/kernel_runner.h"
#include "tests/support/random_tensors.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace smelt;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kExpectedSuffix = ".expected.kernel";

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::optional<std::string> runLinePipeline(std::string_view text) {
  std::string_view first = text.substr(0, text.find('\n'));
  size_t at = first.find("--kernel-passes=");
  if (!first.starts_with("// RUN:") || at == std::string_view::npos) return std::nullopt;
  std::string_view rest = first.substr(at + 16);
  return std::string(rest.substr(0, rest.find_first_of(" \t\r")));
}

/// Runs `kernel` on copies of `buffers`; the written outputs, or the interpreter's error.
Expected<std::vector<Tensor>> interpretOn(const codegen::Kernel& kernel, const std::vector<Tensor>& buffers) {
  std::vector<Tensor> copies = buffers;  // deep: Tensor holds its bytes
  std::vector<Tensor*> pointers;
  for (Tensor& t : copies) pointers.push_back(&t);
  SMELT_CHECK_OK(codegen::interpretKernel(kernel, pointers));
  return copies;
}

void checkCase(const fs::path& input) {
  INFO("golden case: ", input.string());
  std::string inputText = readFile(input);
  auto pipeline = runLinePipeline(inputText);
  REQUIRE_MESSAGE(pipeline, "first line must be `// RUN: --kernel-passes=<pipeline>`");
  auto before = codegen::parseKernel(inputText);
  REQUIRE_MESSAGE(before.ok(), "input does not parse: ", (before.ok() ? "" : before.error().message()));
  // Parsed again rather than copied: loops are shared pointers, and the passes rewrite them in place.
  codegen::Kernel after = std::move(*codegen::parseKernel(inputText));
  auto ran = codegen::runKernelPasses(after, *pipeline);
  REQUIRE_MESSAGE(ran.ok(), (ran.ok() ? "" : ran.error().message()));
  std::string actual = codegen::printKernel(after);

  fs::path expectedFile = input.parent_path() / (input.stem().string() + std::string(kExpectedSuffix));
  if (const char* update = std::getenv("SMELT_UPDATE_GOLDEN"); update && std::string_view(update) == "1") {
    std::ofstream(expectedFile, std::ios::binary) << actual;
  }
  REQUIRE_MESSAGE(fs::exists(expectedFile), "missing ", expectedFile.string(), "; actual output:\n", actual);
  std::string expected = readFile(expectedFile);
  CHECK_MESSAGE(actual == expected, "output differs from ", expectedFile.filename().string(), "\n--- input ---\n",
                inputText, "--- expected ---\n", expected, "--- actual ---\n", actual);
  auto canonical = codegen::parseKernel(expected);
  REQUIRE_MESSAGE(canonical.ok(),
                  "expected file does not parse: ", (canonical.ok() ? "" : canonical.error().message()));
  CHECK_MESSAGE(codegen::printKernel(*canonical) == expected, "expected file is not in printed form");

  // Same buffers in, same outputs out.
  const uint64_t seed = testing::testSeed();
  std::vector<Tensor> buffers;
  for (size_t i = 0; i < before->buffers.size(); ++i) {
    const codegen::KBuffer& b = before->buffers[i];
    buffers.push_back(testing::randomTensor({b.dtype, {b.numel}}, seed + i));
  }
  auto want = interpretOn(*before, buffers);
  auto got = interpretOn(after, buffers);
  if (!want.ok()) {
    CHECK_MESSAGE(!got.ok(), "the input fails (", want.error().message(), ") but the output does not");
    return;
  }
  REQUIRE_MESSAGE(got.ok(), (got.ok() ? "" : got.error().message()));
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (!before->buffers[i].output) continue;
    std::string d = testing::compareTensors((*got)[i], (*want)[i], testing::kernelTolerance((*want)[i].dtype()));
    CHECK_MESSAGE(d.empty(), "buffer %b", i, " (seed ", seed, "): ", d);
  }
}

}  // namespace

TEST_CASE("kernel pass golden files") {
  std::vector<fs::path> cases;
  for (const auto& entry : fs::recursive_directory_iterator(SMELT_KERNEL_GOLDEN_DIR)) {
    std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && entry.path().extension() == ".kernel" && !name.ends_with(kExpectedSuffix)) {
      cases.push_back(entry.path());
    }
  }
  std::sort(cases.begin(), cases.end());
  REQUIRE(!cases.empty());
  // Every pass has at least one case.
  for (const codegen::KernelPass& p : codegen::kernelPasses()) {
    bool covered = std::any_of(cases.begin(), cases.end(),
                               [&](const fs::path& c) { return c.parent_path().filename() == p.name; });
    CHECK_MESSAGE(covered, "no golden case for kernel pass ", p.name, " under tests/codegen/kernel/passes/", p.name);
  }
  for (const fs::path& c : cases) {
    SUBCASE(c.filename().string().c_str()) { checkCase(c); }
  }
}
