// IR text parser: recursive descent over tokens. Grammar (see docs/ir.md):
//   graph    := 'graph' '@' NAME '(' [input {',' input}] ')' '{' {param} {node} return '}'
//   input    := VALUE ':' type
//   param    := ('param' | 'state') VALUE ':' type ['=' body]     (no body: fed on every run)
//   node     := VALUE {',' VALUE} '=' OP '(' [VALUE {',' VALUE}] ')' ['{' attrs '}'] ':' type {',' type}
//               ['loc' '(' STRING ')'] {NAME '=' graph}
//   (a graph after a node is a graph-valued attribute, the body of a fused kernel: its own scope)
//   return   := 'return' [NAME '=' VALUE {',' NAME '=' VALUE}]
//   type     := DTYPE '[' [INT {',' INT}] ']'
//   body     := '[' elements ']' | x"hex" | 'file' '(' STRING ',' INT ')'
#include "ir/parser.h"

#include "ir/lexer.h"
#include "ir/support/input_files.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>

namespace smelt {

namespace {

class Parser {
 public:
  Parser(std::string_view source, const ParseOptions& options, std::vector<Token> tokens)
      : source_(source), options_(options), tokens_(std::move(tokens)) {}

  Expected<Graph> parse() {
    SMELT_TRY(Graph graph, parseGraphDef(0));
    if (peek().kind != TokenKind::End) return fail(peek(), "unexpected text after the end of the graph");
    return graph;
  }

 private:
  // Nested graphs (fused kernel bodies) may not nest deeper than this: a bound on recursion, so
  // hostile input cannot exhaust the stack.
  static constexpr int kMaxNesting = 4;

  Expected<Graph> parseGraphDef(int depth) {
    SMELT_CHECK_OK(expectKeyword("graph"));
    const Token& nameTok = peek();
    if (nameTok.kind != TokenKind::GraphRef) return fail(nameTok, "expected the graph name, like @main");
    std::string graphName = symbolName(next().text);
    Graph graph(graphName);
    SMELT_CHECK_OK(expectPunct("("));
    if (!isPunct(")")) {
      while (true) {
        const Token& vt = peek();
        if (vt.kind != TokenKind::ValueRef) return fail(vt, "expected an input like %x: f32[2,3]");
        std::string key = next().text;
        SMELT_CHECK_OK(expectPunct(":"));
        SMELT_TRY(TensorType type, parseType());
        if (values_.count(key)) return fail(vt, fmt::format("input %{} is defined twice", key));
        values_[key] = graph.addInput(symbolName(key), type);
        if (!isPunct(",")) break;
        next();
      }
    }
    SMELT_CHECK_OK(expectPunct(")"));
    SMELT_CHECK_OK(expectPunct("{"));
    while (isKeyword("dim")) SMELT_CHECK_OK(parseDimRange(graph));
    while (isKeyword("param") || isKeyword("state")) SMELT_CHECK_OK(parseParameter(graph));
    while (!isKeyword("return")) {
      if (peek().kind == TokenKind::End) return fail(peek(), "expected 'return' before the end of the graph");
      SMELT_CHECK_OK(parseNode(graph, depth));
    }
    next();
    SMELT_CHECK_OK(parseReturn(graph));
    SMELT_CHECK_OK(expectPunct("}"));
    return graph;
  }

  // `NAME = graph @k(...) { ... }` after a node: a nested graph in its own scope (it sees none of the
  // enclosing graph's values).
  Status parseRegions(AttrMap& attrs, int depth) {
    while (peek().kind == TokenKind::Identifier && pos_ + 2 < tokens_.size() && tokens_[pos_ + 1].text == "=" &&
           tokens_[pos_ + 2].text == "graph") {
      const Token& nameTok = next();
      std::string name = nameTok.text;
      next();
      if (depth + 1 > kMaxNesting) return fail(nameTok, fmt::format("graphs nest deeper than {} levels", kMaxNesting));
      std::unordered_map<std::string, Value*> outer;
      outer.swap(values_);
      auto body = parseGraphDef(depth + 1);
      values_.swap(outer);
      if (!body) return body.error();
      if (attrs.count(name)) return fail(nameTok, fmt::format("attribute '{}' is given twice", name));
      attrs.emplace(std::move(name), std::make_shared<const Graph>(std::move(body.value())));
    }
    return Status::success();
  }
  // --- token helpers -------------------------------------------------------------------------------
  const Token& peek() const { return tokens_[pos_]; }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool isPunct(std::string_view p) const { return peek().kind == TokenKind::Punct && peek().text == p; }
  bool isKeyword(std::string_view k) const { return peek().kind == TokenKind::Identifier && peek().text == k; }
  Error fail(const Token& t, std::string_view message) const {
    return Error(formatSourceError(source_, options_.sourceName, t.line, t.column, message));
  }
  std::string describe(const Token& t) const {
    if (t.kind == TokenKind::End) return "end of input";
    return fmt::format("'{}'", t.text);
  }
  Status expectPunct(std::string_view p) {
    if (!isPunct(p)) return fail(peek(), fmt::format("expected '{}', got {}", p, describe(peek())));
    next();
    return Status::success();
  }
  Status expectKeyword(std::string_view k) {
    if (!isKeyword(k)) return fail(peek(), fmt::format("expected '{}', got {}", k, describe(peek())));
    next();
    return Status::success();
  }
  // Symbol-table keys of quoted non-identifier names carry a leading quote (see the lexer).
  static std::string symbolName(const std::string& key) { return !key.empty() && key[0] == '"' ? key.substr(1) : key; }

  Expected<int64_t> parseInt() {
    const Token& t = peek();
    int64_t v = 0;
    if (t.kind != TokenKind::Number) return fail(t, fmt::format("expected an integer, got {}", describe(t)));
    const char* begin = t.text.data() + (t.text[0] == '+' ? 1 : 0);
    auto res = std::from_chars(begin, t.text.data() + t.text.size(), v);
    if (res.ec != std::errc() || res.ptr != t.text.data() + t.text.size()) {
      return fail(t, fmt::format("'{}' is not a 64-bit integer", t.text));
    }
    next();
    return v;
  }

  /// `dim N in [1, 256]`: the range of a symbolic dimension of the graph's inputs.
  Status parseDimRange(Graph& graph) {
    next();
    const Token& nameTok = peek();
    if (nameTok.kind != TokenKind::Identifier || !isValidSymbolName(nameTok.text)) {
      return fail(nameTok, fmt::format("expected a dimension's name after 'dim', got {}", describe(nameTok)));
    }
    std::string name = next().text;
    SMELT_CHECK_OK(expectKeyword("in"));
    SMELT_CHECK_OK(expectPunct("["));
    const Token& minTok = peek();
    SMELT_TRY(int64_t min, parseInt());
    SMELT_CHECK_OK(expectPunct(","));
    SMELT_TRY(int64_t max, parseInt());
    SMELT_CHECK_OK(expectPunct("]"));
    if (min < 0 || max < min || max > kMaxElements) {
      return fail(minTok, fmt::format("dim {}: [{}, {}] is no range of extents (0 <= min <= max <= 2^40)", name, min, max));
    }
    if (graph.dimRanges().count(name)) return fail(nameTok, fmt::format("dim {} is declared twice", name));
    graph.setDimRange(name, {min, max});
    return Status::success();
  }

  /// An extent: a count, a symbolic dimension (bound when the graph runs), or a product of them
  /// ("12*N", "N*T").
  // An extent: a count, or a polynomial over symbols as ir/type.h spells it (dimSymbolName):
  //   extent := term (('+' | '-') term)*      N+1, 2*N-T, N*T+N
  //   term   := factor ('*' factor)*         12*N*T
  //   factor := count | symbol | '(' extent ')' ['/' count]      (H+1)/2 is floor division
  // The lexer reads a sign with what follows it: "-1" is a number, "-T" an identifier, a lone "-"
  // before '(' a number token of its own.
  Expected<int64_t> parseExtent() {
    SMELT_TRY(int64_t extent, parseExtentTerm());
    while (true) {
      const Token& t = peek();
      const bool signedToken = (t.kind == TokenKind::Number || t.kind == TokenKind::Identifier) && !t.text.empty() &&
                               (t.text[0] == '+' || t.text[0] == '-');
      if (!signedToken) return extent;
      SMELT_TRY(int64_t term, parseExtentTerm());
      Expected<int64_t> sum = addExtents(extent, term);
      if (!sum.ok()) return fail(t, sum.error().message());
      extent = *sum;
    }
  }

  Expected<int64_t> parseExtentTerm() {
    int64_t extent = 1;
    bool negative = false;
    while (true) {
      const Token& t = peek();
      SMELT_TRY(int64_t factor, parseExtentFactor(negative));
      Expected<int64_t> product = multiplyExtents(extent, factor);
      if (!product.ok()) return fail(t, product.error().message());
      extent = *product;
      if (!isPunct("*")) break;
      next();
    }
    if (!negative) return extent;
    Expected<int64_t> negated = subtractExtents(0, extent);
    if (!negated.ok()) return fail(peek(), negated.error().message());
    return *negated;
  }

  /// One factor without its sign, which flips `negative`.
  Expected<int64_t> parseExtentFactor(bool& negative) {
    const Token& t = peek();
    std::string text = t.text;
    const bool signedWord = (t.kind == TokenKind::Number || t.kind == TokenKind::Identifier) && !text.empty() &&
                            (text[0] == '-' || text[0] == '+');
    if (signedWord && text.size() == 1) {  // "-(H+1)/2"
      negative ^= text == "-";
      next();
      if (!isPunct("(")) return fail(peek(), fmt::format("expected '(' after '{}' in a dimension", text));
    } else if (signedWord && t.kind == TokenKind::Identifier) {  // "-T"
      negative ^= text[0] == '-';
      text = text.substr(1);
    }
    if (isPunct("(")) {
      // Canonical names nest one level per floor quotient of a quotient's numerator: a handful.
      if (++extentDepth_ > kMaxExtentDepth) return fail(peek(), "a dimension nests parentheses too deeply");
      next();
      Expected<int64_t> parsed = parseExtent();
      --extentDepth_;
      SMELT_TRY(int64_t inner, std::move(parsed));
      SMELT_CHECK_OK(expectPunct(")"));
      if (!isPunct("/")) return inner;
      next();
      const Token& d = peek();
      SMELT_TRY(int64_t divisor, parseInt());
      Expected<int64_t> quotient = floorDivideExtent(inner, divisor);
      if (!quotient.ok()) return fail(d, quotient.error().message());
      return *quotient;
    }
    if (t.kind == TokenKind::Identifier) {
      if (!isValidSymbolName(text)) return fail(t, fmt::format("'{}' cannot name a dimension", t.text));
      next();
      return dimSymbol(text);
    }
    SMELT_TRY(int64_t count, parseInt());
    if (count > kMaxElements || count < -kMaxElements) return fail(t, fmt::format("dimension {} is too large", count));
    negative ^= count < 0;
    return count < 0 ? -count : count;
  }

  Expected<TensorType> parseType() {
    const Token& t = peek();
    if (t.kind != TokenKind::Identifier) return fail(t, fmt::format("expected a type like f32[2,3], got {}", describe(t)));
    auto dtype = parseDType(t.text);
    if (!dtype) return fail(t, dtype.error().message());
    next();
    TensorType type{*dtype, {}};
    SMELT_CHECK_OK(expectPunct("["));
    if (!isPunct("]")) {
      while (true) {
        const Token& at = peek();
        SMELT_TRY(int64_t d, parseExtent());
        if (d < 0 && !isSymbolic(d)) return fail(at, fmt::format("dimension {} is negative", d));
        type.shape.push_back(d);
        if (!isPunct(",")) break;
        next();
      }
    }
    SMELT_CHECK_OK(expectPunct("]"));
    Status limits = checkShapeLimits(type.shape);
    if (!limits) return fail(t, limits.error().message());
    return type;
  }

  // --- tensors -------------------------------------------------------------------------------------
  // One list element for `dtype`, parsed directly in that dtype's precision so printing round-trips.
  Status parseElement(Tensor& t, int64_t i) {
    const Token& tok = peek();
    std::string text = tok.text;
    if (tok.kind != TokenKind::Number && tok.kind != TokenKind::Identifier) {
      return fail(tok, fmt::format("expected a number, got {}", describe(tok)));
    }
    bool ok = dispatchDType(t.dtype(), [&]<typename T>(TypeTag<T>) -> bool {
      if constexpr (std::is_same_v<T, bool>) {
        if (text == "true" || text == "1") { t.data<bool>()[i] = true; return true; }
        if (text == "false" || text == "0") { t.data<bool>()[i] = false; return true; }
        return false;
      } else if constexpr (std::is_integral_v<T>) {
        T v{};
        const char* b = text.data() + (text[0] == '+' ? 1 : 0);
        auto r = std::from_chars(b, text.data() + text.size(), v);
        if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return false;
        t.data<T>()[i] = v;
        return true;
      } else {
        using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
        P v{};
        if (text == "inf" || text == "+inf") v = std::numeric_limits<P>::infinity();
        else if (text == "-inf") v = -std::numeric_limits<P>::infinity();
        else if (text == "nan") v = std::numeric_limits<P>::quiet_NaN();
        else {
          const char* b = text.data() + (text[0] == '+' ? 1 : 0);
          auto r = std::from_chars(b, text.data() + text.size(), v);
          if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return false;
        }
        t.data<T>()[i] = static_cast<T>(v);
        return true;
      }
    });
    if (!ok) return fail(tok, fmt::format("'{}' is not a valid {} value", text, dtypeName(t.dtype())));
    next();
    return Status::success();
  }

  Expected<Tensor> parseTensorBody(const TensorType& type) {
    const Token& start = peek();
    // Every form is checked against what the text (or the file) holds before the tensor is allocated:
    // a short text declaring a huge literal must be an error, not gigabytes of zeros.
    if (start.kind == TokenKind::HexBlob && start.text.size() != type.byteSize() * 2) {
      return fail(start, fmt::format("hex data has {} bytes, type {} needs {}", start.text.size() / 2, type.toString(),
                                     type.byteSize()));
    }
    if (start.kind != TokenKind::HexBlob && !isKeyword("file") && type.numel() > static_cast<int64_t>(tokens_.size() - pos_)) {
      return fail(start, fmt::format("{} has {} elements, more than the rest of the text holds", type.toString(),
                                     type.numel()));
    }
    if (isKeyword("file")) return parseExternalBody(type);
    Tensor t(type);
    if (start.kind == TokenKind::HexBlob) {
      const std::string& hex = start.text;
      for (size_t i = 0; i < t.byteSize(); ++i) {
        unsigned v = 0;
        auto r = std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, v, 16);
        if (r.ec != std::errc() || r.ptr != hex.data() + 2 * i + 2) return fail(start, "hex data has a non-hex digit");
        t.raw()[i] = static_cast<std::byte>(v);
      }
      next();
      return t;
    }
    SMELT_CHECK_OK(expectPunct("["));
    int64_t i = 0;
    if (!isPunct("]")) {
      while (true) {
        if (i >= t.numel()) return fail(peek(), fmt::format("too many elements for {}", type.toString()));
        SMELT_CHECK_OK(parseElement(t, i++));
        if (!isPunct(",")) break;
        next();
      }
    }
    if (i != t.numel()) {
      return fail(peek(), fmt::format("{} has {} elements, the literal gives {}", type.toString(), t.numel(), i));
    }
    SMELT_CHECK_OK(expectPunct("]"));
    return t;
  }

  /// `file("name", offset)`: the bytes read (their range checked against the file) before the tensor
  /// is allocated.
  Expected<Tensor> parseExternalBody(const TensorType& type) {
    next();
    SMELT_CHECK_OK(expectPunct("("));
    const Token& pathTok = peek();
    if (pathTok.kind != TokenKind::String) return fail(pathTok, "expected the external data file name");
    std::string path = next().text;
    SMELT_CHECK_OK(expectPunct(","));
    SMELT_TRY(int64_t offset, parseInt());
    SMELT_CHECK_OK(expectPunct(")"));
    Expected<std::filesystem::path> full = resolveInsideFolder(options_.externalDataDir, path, "external data");
    if (!full) return fail(pathTok, full.error().message());
    Expected<std::string> bytes = readFileRange(*full, offset, static_cast<int64_t>(type.byteSize()), "external data");
    if (!bytes) return fail(pathTok, bytes.error().message());
    Tensor t(type);
    std::memcpy(t.raw(), bytes->data(), bytes->size());
    return t;
  }

  // --- attributes ----------------------------------------------------------------------------------
  Expected<Attribute> parseAttributeValue() {
    const Token& t = peek();
    if (t.kind == TokenKind::String) return Attribute(next().text);
    if (isKeyword("dense")) {
      next();
      SMELT_CHECK_OK(expectPunct("<"));
      const Token& typeTok = peek();
      SMELT_TRY(TensorType type, parseType());
      if (!type.isStatic()) return fail(typeTok, fmt::format("a tensor literal has a static type, not {}", type.toString()));
      SMELT_CHECK_OK(expectPunct(">"));
      SMELT_TRY(Tensor tensor, parseTensorBody(type));
      return Attribute(std::move(tensor));
    }
    if (isPunct("[")) {
      next();
      std::vector<const Token*> toks;
      std::vector<std::optional<int64_t>> extents;  // per item: a symbolic extent ("N", "4*N")
      if (!isPunct("]")) {
        while (true) {
          toks.push_back(&peek());
          extents.emplace_back();
          const bool product =
              pos_ + 1 < tokens_.size() && tokens_[pos_ + 1].kind == TokenKind::Punct && tokens_[pos_ + 1].text == "*";
          const bool group =
              isPunct("(") || ((peek().text == "-" || peek().text == "+") && pos_ + 1 < tokens_.size() &&
                               tokens_[pos_ + 1].kind == TokenKind::Punct && tokens_[pos_ + 1].text == "(");
          if (isSymbolToken(peek()) || product || group) {
            SMELT_TRY(extents.back(), parseExtent());  // a symbolic dimension in an integer list
            if (!isSymbolic(*extents.back())) return fail(*toks.back(), "arithmetic on counts: write its value");
          } else {
            SMELT_TRY(Attribute a, parseScalar());
          }
          if (!isPunct(",")) break;
          next();
        }
      }
      SMELT_CHECK_OK(expectPunct("]"));
      bool allInts = true, anySymbol = false;
      for (size_t i = 0; i < toks.size(); ++i) {
        anySymbol = anySymbol || extents[i].has_value();
        allInts = allInts && (isIntText(toks[i]->text) || extents[i].has_value());
      }
      if (allInts) {
        std::vector<int64_t> ints;
        for (size_t i = 0; i < toks.size(); ++i) {
          ints.push_back(extents[i] ? *extents[i] : std::get<int64_t>(*scalarOf(*toks[i])));
        }
        return Attribute(std::move(ints));
      }
      if (anySymbol) return fail(*toks.front(), "a list with a symbolic dimension holds integers only");
      std::vector<double> floats;
      for (const Token* tok : toks) {
        Attribute a = *scalarOf(*tok);
        floats.push_back(a.index() == 0 ? static_cast<double>(std::get<int64_t>(a)) : std::get<double>(a));
      }
      return Attribute(std::move(floats));
    }
    return parseScalar();
  }

  /// An identifier in an attribute list that is no float word: a symbolic dimension's name.
  static bool isSymbolToken(const Token& t) {
    return t.kind == TokenKind::Identifier && t.text != "inf" && t.text != "+inf" && t.text != "-inf" &&
           t.text != "nan" && t.text != "true" && t.text != "false";
  }

  static bool isIntText(const std::string& s) {
    if (s.empty()) return false;
    size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
    if (i >= s.size()) return false;
    for (; i < s.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    }
    return true;
  }

  Expected<Attribute> scalarOf(const Token& t) const {
    const std::string& s = t.text;
    if (t.kind == TokenKind::Identifier) {
      if (s == "inf" || s == "+inf") return Attribute(std::numeric_limits<double>::infinity());
      if (s == "-inf") return Attribute(-std::numeric_limits<double>::infinity());
      if (s == "nan") return Attribute(std::numeric_limits<double>::quiet_NaN());
      return fail(t, fmt::format("expected an attribute value, got {}", describe(t)));
    }
    if (t.kind != TokenKind::Number) return fail(t, fmt::format("expected an attribute value, got {}", describe(t)));
    const char* b = s.data() + (s[0] == '+' ? 1 : 0);
    const char* e = s.data() + s.size();
    if (isIntText(s)) {
      int64_t v = 0;
      auto r = std::from_chars(b, e, v);
      if (r.ec != std::errc() || r.ptr != e) return fail(t, fmt::format("'{}' is not a 64-bit integer", s));
      return Attribute(v);
    }
    double d = 0;
    auto r = std::from_chars(b, e, d);
    if (r.ec != std::errc() || r.ptr != e) return fail(t, fmt::format("'{}' is not a number", s));
    return Attribute(d);
  }

  Expected<Attribute> parseScalar() {
    SMELT_TRY(Attribute a, scalarOf(peek()));
    next();
    return a;
  }

  Expected<AttrMap> parseAttributes() {
    AttrMap attrs;
    SMELT_CHECK_OK(expectPunct("{"));
    if (!isPunct("}")) {
      while (true) {
        const Token& nameTok = peek();
        if (nameTok.kind != TokenKind::Identifier && nameTok.kind != TokenKind::String) {
          return fail(nameTok, fmt::format("expected an attribute name, got {}", describe(nameTok)));
        }
        std::string name = next().text;
        SMELT_CHECK_OK(expectPunct("="));
        SMELT_TRY(Attribute value, parseAttributeValue());
        if (attrs.count(name)) return fail(nameTok, fmt::format("attribute '{}' is given twice", name));
        attrs.emplace(std::move(name), std::move(value));
        if (!isPunct(",")) break;
        next();
      }
    }
    SMELT_CHECK_OK(expectPunct("}"));
    return attrs;
  }

  // --- graph parts ---------------------------------------------------------------------------------
  Status parseParameter(Graph& graph) {
    bool trainable = next().text == "param";
    const Token& vt = peek();
    if (vt.kind != TokenKind::ValueRef) return fail(vt, "expected a parameter name like %w");
    std::string key = next().text;
    if (values_.count(key)) return fail(vt, fmt::format("%{} is defined twice", key));
    SMELT_CHECK_OK(expectPunct(":"));
    const Token& typeTok = peek();
    SMELT_TRY(TensorType type, parseType());
    if (!type.isStatic()) return fail(typeTok, fmt::format("parameter %{} has a static type, not {}", key, type.toString()));
    if (!isPunct("=")) {
      values_[key] = graph.addFedParameter(symbolName(key), type, trainable);
      return Status::success();
    }
    SMELT_CHECK_OK(expectPunct("="));
    SMELT_TRY(Tensor init, parseTensorBody(type));
    values_[key] = graph.addParameter(symbolName(key), std::move(init), trainable);
    return Status::success();
  }

  Status parseNode(Graph& graph, int depth) {
    const Token& first = peek();
    std::vector<const Token*> resultToks;
    while (true) {
      const Token& rt = peek();
      if (rt.kind != TokenKind::ValueRef) return fail(rt, fmt::format("expected a result like %0, got {}", describe(rt)));
      resultToks.push_back(&next());
      if (!isPunct(",")) break;
      next();
    }
    SMELT_CHECK_OK(expectPunct("="));
    const Token& opTok = peek();
    if (opTok.kind != TokenKind::Identifier) return fail(opTok, fmt::format("expected an op name, got {}", describe(opTok)));
    std::string opName = next().text;
    SMELT_CHECK_OK(expectPunct("("));
    std::vector<Value*> operands;
    if (!isPunct(")")) {
      while (true) {
        const Token& ot = peek();
        if (ot.kind != TokenKind::ValueRef) return fail(ot, fmt::format("expected an operand like %x, got {}", describe(ot)));
        auto it = values_.find(ot.text);
        if (it == values_.end()) return fail(ot, fmt::format("use of undefined value %{}", ot.text));
        operands.push_back(it->second);
        next();
        if (!isPunct(",")) break;
        next();
      }
    }
    SMELT_CHECK_OK(expectPunct(")"));
    AttrMap attrs;
    if (isPunct("{")) {
      SMELT_TRY(attrs, parseAttributes());
    }
    SMELT_CHECK_OK(expectPunct(":"));
    std::vector<TensorType> declared;
    std::vector<const Token*> typeToks;
    while (true) {
      typeToks.push_back(&peek());
      SMELT_TRY(TensorType type, parseType());
      declared.push_back(std::move(type));
      if (!isPunct(",")) break;
      next();
    }
    std::string source;
    if (isKeyword("loc")) {
      next();
      SMELT_CHECK_OK(expectPunct("("));
      const Token& st = peek();
      if (st.kind != TokenKind::String) return fail(st, "expected a string in loc(...)");
      source = next().text;
      SMELT_CHECK_OK(expectPunct(")"));
    }
    SMELT_CHECK_OK(parseRegions(attrs, depth));
    auto node = graph.addNode(opName, std::move(operands), std::move(attrs), source);
    if (!node) return fail(opTok, node.error().message());
    Node* n = node.value();
    if (n->results().size() != resultToks.size()) {
      return fail(first, fmt::format("{} has {} results, {} are named", graph.labelOf(*n), n->results().size(),
                                     resultToks.size()));
    }
    if (declared.size() != resultToks.size()) {
      return fail(*typeToks.back(), fmt::format("{} names {} results but gives {} types", graph.labelOf(*n),
                                                resultToks.size(), declared.size()));
    }
    for (size_t i = 0; i < declared.size(); ++i) {
      if (!(declared[i] == n->result(i)->type())) {
        return fail(*typeToks[i], fmt::format("{}: result #{} is declared {} but the op gives {}", graph.labelOf(*n), i,
                                              declared[i].toString(), n->result(i)->type().toString()));
      }
      const std::string& key = resultToks[i]->text;
      if (values_.count(key)) return fail(*resultToks[i], fmt::format("%{} is defined twice", key));
      values_[key] = n->result(i);
    }
    return Status::success();
  }

  Status parseReturn(Graph& graph) {
    if (isPunct("}")) return Status::success();
    while (true) {
      const Token& nt = peek();
      if (nt.kind != TokenKind::Identifier && nt.kind != TokenKind::String) {
        return fail(nt, fmt::format("expected an output name like y = %3, got {}", describe(nt)));
      }
      std::string name = next().text;
      SMELT_CHECK_OK(expectPunct("="));
      const Token& vt = peek();
      if (vt.kind != TokenKind::ValueRef) return fail(vt, fmt::format("expected a value like %3, got {}", describe(vt)));
      auto it = values_.find(vt.text);
      if (it == values_.end()) return fail(vt, fmt::format("use of undefined value %{}", vt.text));
      next();
      for (const GraphOutput& o : graph.outputs()) {
        if (o.name == name) return fail(nt, fmt::format("output '{}' is returned twice", name));
      }
      graph.addOutput(name, it->second);
      if (!isPunct(",")) break;
      next();
    }
    return Status::success();
  }

  std::string_view source_;
  const ParseOptions& options_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::unordered_map<std::string, Value*> values_;
  // Parentheses open in the dimension being parsed (parseExtentFactor), bounded: no input recurses deeply.
  static constexpr int kMaxExtentDepth = 16;
  int extentDepth_ = 0;
};

}  // namespace

Expected<Graph> parseGraph(std::string_view text, const ParseOptions& options) {
  SMELT_TRY(std::vector<Token> tokens, tokenize(text, options.sourceName));
  Parser parser(text, options, std::move(tokens));
  return parser.parse();
}

}  // namespace smelt
