#include "ir/support/byte_count.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

namespace smelt {

Expected<int64_t> parseByteCount(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return makeError("'{}' is not a byte count ({}): write digits, optionally with K, M, G or T (KiB, MiB, ...)", text,
                     why);
  };
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  std::string number(text.substr(0, digits));
  if (number.empty() || number.front() == '.' || number.find('.') != number.rfind('.')) return bad("no number");
  std::string unit(text.substr(digits));
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() == 3 && unit.substr(1) == "IB") unit.resize(1);
  double scale = 1;
  if (unit == "K") {
    scale = 0x1p10;
  } else if (unit == "M") {
    scale = 0x1p20;
  } else if (unit == "G") {
    scale = 0x1p30;
  } else if (unit == "T") {
    scale = 0x1p40;
  } else if (!unit.empty() && unit != "B") {
    return bad(fmt::format("unknown unit '{}'", text.substr(digits)));
  }
  if (scale == 1 && number.find('.') != std::string::npos) return bad("a fraction of a byte");
  double bytes = std::stod(number) * scale;
  if (!(bytes <= 0x1p62)) return bad("too large");
  return static_cast<int64_t>(std::llround(bytes));
}

std::string formatByteCount(int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (unit < 3 && value >= 1024) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {} ({} bytes)", value, kUnits[unit], bytes);
}

}  // namespace smelt
