// Tokens of smelt IR text. Comments run from `//` to the end of the line.
#pragma once

#include "ir/support/expected.h"

#include <string>
#include <string_view>
#include <vector>

namespace smelt {

enum class TokenKind {
  Identifier,  // graph, matmul, f32, true, inf, x.y_z
  Number,      // 12, -3, 1.5e-3 (text kept exactly; parsed by the consumer for its dtype)
  String,      // "abc" (unescaped into `text`)
  HexBlob,     // x"00ff" (the hex digits in `text`)
  ValueRef,    // %name, %12, %"odd name" (the symbol-table key in `text`)
  GraphRef,    // @name
  Punct,       // ( ) { } [ ] < > : , =
  End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;
  int line = 1;
  int column = 1;
};

/// Splits `source` into tokens, or fails on the first malformed one (unterminated string, stray char).
Expected<std::vector<Token>> tokenize(std::string_view source, std::string_view sourceName);

/// "name:line:col: message" followed by the source line and a caret under the column.
std::string formatSourceError(std::string_view source, std::string_view sourceName, int line, int column,
                              std::string_view message);

}  // namespace smelt
