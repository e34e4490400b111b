// IR text tokenizer.
#include "ir/lexer.h"

#include <cctype>

namespace smelt {

std::string formatSourceError(std::string_view source, std::string_view sourceName, int line, int column,
                              std::string_view message) {
  size_t start = 0;
  for (int l = 1; l < line && start < source.size(); ++l) {
    size_t nl = source.find('\n', start);
    start = nl == std::string_view::npos ? source.size() : nl + 1;
  }
  size_t end = source.find('\n', start);
  std::string_view text = source.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  std::string caret(static_cast<size_t>(std::max(column - 1, 0)), ' ');
  return fmt::format("{}:{}:{}: {}\n  {}\n  {}^", sourceName, line, column, message, text, caret);
}

namespace {

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentBody(char c) { return isIdentStart(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '.'; }

class Lexer {
 public:
  Lexer(std::string_view src, std::string_view name) : src_(src), name_(name) {}

  Expected<std::vector<Token>> run() {
    std::vector<Token> tokens;
    while (true) {
      skipSpaceAndComments();
      Token t;
      t.line = line_;
      t.column = column_;
      if (pos_ >= src_.size()) {
        t.kind = TokenKind::End;
        tokens.push_back(t);
        return tokens;
      }
      char c = src_[pos_];
      if (c == '%' || c == '@') {
        advance();
        t.kind = c == '%' ? TokenKind::ValueRef : TokenKind::GraphRef;
        if (peek() == '"') {
          SMELT_TRY(std::string s, readString(t));
          // Quoted names that are not identifiers get a marker so %"0" never aliases %0.
          bool ident = !s.empty() && isIdentStart(s[0]);
          for (char ch : s) ident = ident && isIdentBody(ch);
          t.text = ident ? s : "\"" + s;
        } else if (pos_ < src_.size() && isIdentBody(src_[pos_])) {
          while (pos_ < src_.size() && isIdentBody(src_[pos_])) t.text += advance();
        } else {
          return fail(t, fmt::format("expected a name after '{}'", c));
        }
      } else if (c == 'x' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '"') {
        advance();
        t.kind = TokenKind::HexBlob;
        SMELT_TRY(t.text, readString(t));
      } else if (isIdentStart(c)) {
        t.kind = TokenKind::Identifier;
        while (pos_ < src_.size() && isIdentBody(src_[pos_])) t.text += advance();
      } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+') {
        t.kind = TokenKind::Number;
        t.text += advance();
        if ((c == '-' || c == '+') && pos_ < src_.size() && isIdentStart(src_[pos_])) {
          // -inf, -nan
          t.kind = TokenKind::Identifier;
          while (pos_ < src_.size() && isIdentBody(src_[pos_])) t.text += advance();
        } else {
          while (pos_ < src_.size()) {
            char d = src_[pos_];
            bool exponentSign = (d == '-' || d == '+') && !t.text.empty() && (t.text.back() == 'e' || t.text.back() == 'E');
            if (std::isalnum(static_cast<unsigned char>(d)) || d == '.' || exponentSign) {
              t.text += advance();
            } else {
              break;
            }
          }
        }
      } else if (c == '"') {
        t.kind = TokenKind::String;
        SMELT_TRY(t.text, readString(t));
      } else if (std::string_view("(){}[]<>:,=*/").find(c) != std::string_view::npos) {
        t.kind = TokenKind::Punct;
        t.text = std::string(1, advance());
      } else {
        return fail(t, fmt::format("unexpected character '{}'", printable(c)));
      }
      tokens.push_back(std::move(t));
    }
  }

 private:
  static std::string printable(char c) {
    return std::isprint(static_cast<unsigned char>(c)) ? std::string(1, c)
                                                       : fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  }
  char peek() const { return pos_ < src_.size() ? src_[pos_] : '\0'; }
  char advance() {
    char c = src_[pos_++];
    if (c == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    return c;
  }
  void skipSpaceAndComments() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (std::isspace(static_cast<unsigned char>(c))) {
        advance();
      } else if (c == '/' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '/') {
        while (pos_ < src_.size() && src_[pos_] != '\n') advance();
      } else {
        break;
      }
    }
  }
  Error fail(const Token& t, std::string_view message) const {
    return Error(formatSourceError(src_, name_, t.line, t.column, message));
  }
  Expected<std::string> readString(const Token& t) {
    advance();  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= src_.size() || src_[pos_] == '\n') return fail(t, "unterminated string");
      char c = advance();
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= src_.size()) return fail(t, "unterminated string");
      char e = advance();
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'x': {
          if (pos_ + 2 > src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[pos_])) ||
              !std::isxdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
            return fail(t, "bad \\x escape in string");
          }
          std::string hex{advance(), advance()};
          out += static_cast<char>(std::stoi(hex, nullptr, 16));
          break;
        }
        default: return fail(t, fmt::format("unknown escape '\\{}' in string", printable(e)));
      }
    }
  }

  std::string_view src_;
  std::string_view name_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

}  // namespace

Expected<std::vector<Token>> tokenize(std::string_view source, std::string_view sourceName) {
  return Lexer(source, sourceName).run();
}

}  // namespace smelt
