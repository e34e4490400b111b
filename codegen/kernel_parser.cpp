// parseKernel (see kernel_parser.h): one statement per line, read with a small cursor.
#include "codegen/kernel_parser.h"

#include "codegen/vectorize.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace smelt::codegen {

namespace {

// Bounds that keep a hostile text from asking for huge tables (value ids index Kernel::types).
constexpr int64_t kMaxValueId = 1 << 24;
constexpr size_t kMaxDepth = 64;

std::optional<KUnary> unaryNamed(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(KUnary::IsNan); ++i) {
    if (kUnaryName(static_cast<KUnary>(i)) == name) return static_cast<KUnary>(i);
  }
  return std::nullopt;
}

std::optional<KBinary> binaryNamed(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(KBinary::Ne); ++i) {
    if (kBinaryName(static_cast<KBinary>(i)) == name) return static_cast<KBinary>(i);
  }
  return std::nullopt;
}

/// One line being read.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}

  void spaces() {
    while (!s_.empty() && (s_.front() == ' ' || s_.front() == '\t' || s_.front() == '\r')) s_.remove_prefix(1);
  }
  bool done() {
    spaces();
    return s_.empty();
  }
  /// The next character after spaces, or 0.
  char peek() {
    spaces();
    return s_.empty() ? '\0' : s_.front();
  }
  /// Consumes `token` (after spaces) when it is next.
  bool eat(std::string_view token) {
    spaces();
    if (!s_.starts_with(token)) return false;
    s_.remove_prefix(token.size());
    return true;
  }
  /// A run of letters, digits, '_', '.', '-' (names, numbers, dtypes).
  std::string_view word() {
    spaces();
    size_t n = 0;
    while (n < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[n])) || s_[n] == '_' || s_[n] == '.' ||
                             s_[n] == '-' || s_[n] == '+')) {
      ++n;
    }
    std::string_view w = s_.substr(0, n);
    s_.remove_prefix(n);
    return w;
  }
  std::optional<int64_t> integer() {
    std::string_view w = word();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
    if (w.empty() || ec != std::errc() || end != w.data() + w.size()) return std::nullopt;
    return v;
  }
  /// A string as quoteString writes it.
  std::optional<std::string> quoted() {
    if (!eat("\"")) return std::nullopt;
    std::string out;
    while (!s_.empty() && s_.front() != '"') {
      char c = s_.front();
      s_.remove_prefix(1);
      if (c != '\\') {
        out += c;
        continue;
      }
      if (s_.empty()) return std::nullopt;
      char e = s_.front();
      s_.remove_prefix(1);
      if (e == 'n')
        out += '\n';
      else if (e == 't')
        out += '\t';
      else if (e == '"' || e == '\\')
        out += e;
      else if (e == 'x' && s_.size() >= 2) {
        unsigned v = 0;
        auto [end, ec] = std::from_chars(s_.data(), s_.data() + 2, v, 16);
        if (ec != std::errc() || end != s_.data() + 2) return std::nullopt;
        out += static_cast<char>(v);
        s_.remove_prefix(2);
      } else {
        return std::nullopt;
      }
    }
    if (!eat("\"")) return std::nullopt;
    return out;
  }
  std::string_view rest() const { return s_; }

 private:
  std::string_view s_;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Expected<Kernel> run() {
    std::vector<std::string_view> lines;
    for (size_t at = 0; at <= text_.size();) {
      size_t end = text_.find('\n', at);
      if (end == std::string_view::npos) end = text_.size();
      lines.push_back(text_.substr(at, end - at));
      at = end + 1;
    }
    bool header = false;
    for (size_t n = 0; n < lines.size(); ++n) {
      line_ = n + 1;
      Cursor c(lines[n]);
      if (c.done()) continue;
      if (c.eat("//")) {
        // Provenance belongs to the kernel's header; other comments (a RUN line) are skipped.
        if (header && stack_.size() == 1 && c.eat("from ")) kernel_.provenance.emplace_back(c.rest());
        continue;
      }
      if (!header) {
        SMELT_CHECK_OK(headerLine(c));
        header = true;
        stack_.push_back(&kernel_.body);
        continue;
      }
      if (stack_.empty()) return fail("text after the kernel's end");
      SMELT_CHECK_OK(statement(c));
    }
    if (!header) return makeError("kernel text: no `kernel @NAME domain [...]` line");
    if (stack_.size() > 1) return makeError("kernel text: {} loop(s) not closed at the end", stack_.size() - 1);
    return std::move(kernel_);
  }

 private:
  Error fail(std::string_view what) const { return makeError("kernel text, line {}: {}", line_, what); }

  Status headerLine(Cursor& c) {
    if (!c.eat("kernel") || !c.eat("@")) return fail("expected `kernel @NAME domain [...]`");
    kernel_.name = std::string(c.word());
    if (kernel_.name.empty()) return fail("expected the kernel's name after `@`");
    if (!c.eat("domain") || !c.eat("[")) return fail("expected `domain [...]` after the name");
    if (!c.eat("]")) {
      do {
        // `?`: the first extent of a kernel compiled for every size, given when it is launched.
        if (kernel_.domain.empty() && c.eat("?")) {
          kernel_.domain.push_back(kRunTimeExtent);
          continue;
        }
        auto d = c.integer();
        if (!d || *d < 0) return fail("a domain extent must be a non-negative integer (or `?` for the first)");
        kernel_.domain.push_back(*d);
      } while (c.eat(","));
      if (!c.eat("]")) return fail("expected `]` closing the domain");
    }
    if (c.eat("threads")) {
      auto t = c.integer();
      if (!t || *t <= 0 || *t > 1024 || (*t & (*t - 1)) != 0) return fail("threads must be a power of two up to 1024");
      kernel_.blockThreads = static_cast<int32_t>(*t);
    }
    if (c.eat("vector")) {
      auto lanes = c.integer();
      if (!lanes || *lanes != kVectorLanes || kernel_.blockThreads > 0) {
        return fail(fmt::format("vector must be {} (and the kernel not block-mapped)", kVectorLanes));
      }
      kernel_.pointsPerThread = static_cast<int32_t>(*lanes);
    }
    if (!c.done()) return fail(fmt::format("unexpected `{}` after the header", c.rest()));
    return Status::success();
  }

  /// `%N`, a value id.
  std::optional<int32_t> valueId(Cursor& c) {
    if (!c.eat("%")) return std::nullopt;
    auto v = c.integer();
    if (!v || *v < 0 || *v >= kMaxValueId) return std::nullopt;
    return static_cast<int32_t>(*v);
  }
  /// `%bN`, a buffer index.
  std::optional<int32_t> bufferId(Cursor& c) {
    if (!c.eat("%b")) return std::nullopt;
    auto v = c.integer();
    if (!v || *v < 0 || *v >= static_cast<int64_t>(kernel_.buffers.size())) return std::nullopt;
    return static_cast<int32_t>(*v);
  }

  /// Defines value `id` of `dtype`; each id once.
  Status define(int32_t id, DType dtype) {
    if (static_cast<size_t>(id) >= kernel_.types.size()) {
      kernel_.types.resize(static_cast<size_t>(id) + 1, DType::f32);
      defined_.resize(static_cast<size_t>(id) + 1, false);
    }
    if (defined_[static_cast<size_t>(id)]) return fail(fmt::format("%{} is defined twice", id));
    defined_[static_cast<size_t>(id)] = true;
    kernel_.types[static_cast<size_t>(id)] = dtype;
    return Status::success();
  }
  /// A use of a defined value: `%N`.
  Expected<int32_t> use(Cursor& c, std::string_view what) {
    auto id = valueId(c);
    if (!id) return fail(fmt::format("expected a value (%N) as {}", what));
    if (static_cast<size_t>(*id) >= defined_.size() || !defined_[static_cast<size_t>(*id)]) {
      return fail(fmt::format("%{} is used before it is defined", *id));
    }
    return *id;
  }
  DType typeOf(int32_t id) const { return kernel_.types[static_cast<size_t>(id)]; }
  Expected<DType> dtype(Cursor& c) {
    std::string_view name = c.word();
    auto d = parseDType(name);
    if (!d) return fail(fmt::format("`{}` is not a dtype", name));
    return *d;
  }

  Status statement(Cursor& c) {
    KBlock& block = *stack_.back();
    if (c.eat("}")) {
      if (stack_.size() == 1) {
        stack_.pop_back();  // the kernel's end (its body has no braces; tolerated)
        return Status::success();
      }
      return closeLoop();
    }
    if (c.eat("buffer")) return bufferLine(c);
    if (c.eat("store")) {
      auto b = bufferId(c);
      if (!b) return fail("expected a buffer (%bN) after `store`");
      if (!c.eat("[")) return fail("expected `[` after the store's buffer");
      SMELT_TRY(int32_t offset, use(c, "the store's offset"));
      if (!c.eat("]") || !c.eat("=")) return fail("expected `] =` in the store");
      SMELT_TRY(int32_t value, use(c, "the stored value"));
      if (typeOf(offset) != DType::i64) return fail("a store's offset must be i64");
      if (!kernel_.buffers[static_cast<size_t>(*b)].output) return fail(fmt::format("%b{} is not an output", *b));
      block.stmts.emplace_back(KStore{.buffer = *b, .offset = offset, .value = value});
      return c.done() ? Status::success() : fail("unexpected text after the store");
    }
    if (c.eat("yield")) {
      if (stack_.size() == 1) return fail("`yield` outside a loop");
      KLoop& loop = *loops_.back();
      do {
        SMELT_TRY(int32_t v, use(c, "a yielded value"));
        loop.next.push_back(v);
      } while (c.eat(","));
      if (loop.next.size() != loop.carried.size()) {
        return fail(fmt::format("the loop carries {} value(s) and yields {}", loop.carried.size(), loop.next.size()));
      }
      return c.done() ? Status::success() : fail("unexpected text after the yield");
    }
    if (c.eat("loop")) return loopLine(c, {});
    // `%R = ...` or `%R1, %R2 = loop ...`
    std::vector<int32_t> results;
    do {
      auto r = valueId(c);
      if (!r) return fail("expected a statement: `%N = ...`, `store`, `loop`, `yield`, `buffer` or `}`");
      results.push_back(*r);
    } while (c.eat(","));
    if (!c.eat("=")) return fail("expected `=` after the result");
    if (c.eat("loop")) return loopLine(c, std::move(results));
    if (results.size() != 1) return fail("only a loop has several results");
    return instruction(c, results[0]);
  }

  Status bufferLine(Cursor& c) {
    auto index = c.eat("%b") ? c.integer() : std::nullopt;
    if (!index || *index != static_cast<int64_t>(kernel_.buffers.size())) {
      return fail(fmt::format("expected buffer %b{} (buffers are numbered in order)", kernel_.buffers.size()));
    }
    if (!kernel_.body.stmts.empty() || stack_.size() != 1) return fail("buffers come before the body");
    KBuffer b;
    if (!c.eat(":")) return fail("expected `:` after the buffer");
    SMELT_TRY(b.dtype, dtype(c));
    if (!c.eat("[")) return fail("expected `[N]` after the buffer's dtype");
    auto n = c.eat("?") ? std::optional<int64_t>(kRunTimeExtent) : c.integer();
    if (!n || (*n < 0 && *n != kRunTimeExtent) || !c.eat("]")) {
      return fail("a buffer's element count must be a non-negative integer, or `?`");
    }
    b.numel = *n;
    std::string_view dir = c.word();
    if (dir != "in" && dir != "out") return fail("expected `in` or `out`");
    b.output = dir == "out";
    auto name = c.quoted();
    if (!name) return fail("expected the buffer's quoted name");
    b.name = std::move(*name);
    if (c.eat("same")) {
      auto same = bufferId(c);
      if (!same) return fail("expected an earlier buffer after `same`");
      b.sameAs = *same;
    }
    kernel_.buffers.push_back(std::move(b));
    return c.done() ? Status::success() : fail("unexpected text after the buffer");
  }

  Status instruction(Cursor& c, int32_t result) {
    KInst i;
    i.result = result;
    std::string_view op = c.word();
    if (op == "const") {
      std::string_view lit = c.word();
      if (!c.eat(":")) return fail("expected `: dtype` after the constant");
      SMELT_TRY(i.dtype, dtype(c));
      i.kind = KInstKind::Const;
      if (isFloat(i.dtype)) {
        std::string s(lit);
        char* end = nullptr;
        i.fbits = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size()) return fail(fmt::format("`{}` is not a float", lit));
      } else {
        int64_t v = 0;
        auto [end, ec] = std::from_chars(lit.data(), lit.data() + lit.size(), v);
        if (lit.empty() || ec != std::errc() || end != lit.data() + lit.size()) {
          return fail(fmt::format("`{}` is not an integer", lit));
        }
        i.ibits = v;
      }
    } else if (op == "outer") {
      auto d = c.integer();
      if (!d || *d < 0 || *d >= static_cast<int64_t>(kernel_.domain.size())) {
        return fail("`outer` takes a dimension of the domain");
      }
      i.kind = KInstKind::Outer;
      i.ibits = *d;
    } else if (op == "param") {
      auto k = c.integer();
      if (!k || *k < 0) return fail("`param` takes the index of a run-time value");
      if (kernel_.buffers.empty() || kernel_.buffers.back().dtype != DType::i64 || kernel_.buffers.back().output ||
          *k >= kernel_.buffers.back().numel) {
        return fail("`param K` reads element K of the last buffer, an i64 input with more than K elements");
      }
      i.kind = KInstKind::Param;
      i.ibits = *k;
    } else if (op == "select") {
      i.kind = KInstKind::Select;
      SMELT_TRY(i.a, use(c, "the condition"));
      if (!c.eat(",")) return fail("expected `,` in select");
      SMELT_TRY(i.b, use(c, "select's second operand"));
      if (!c.eat(",")) return fail("expected `,` in select");
      SMELT_TRY(i.c, use(c, "select's third operand"));
    } else if (op == "cast") {
      i.kind = KInstKind::Cast;
      SMELT_TRY(i.a, use(c, "the cast's operand"));
    } else if (op == "load") {
      i.kind = KInstKind::Load;
      auto b = bufferId(c);
      if (!b || !c.eat("[")) return fail("expected `load %bN[%offset]`");
      i.ibits = *b;
      SMELT_TRY(i.a, use(c, "the load's offset"));
      if (!c.eat("]")) return fail("expected `]` after the load's offset");
      if (typeOf(i.a) != DType::i64) return fail("a load's offset must be i64");
    } else if (auto u = unaryNamed(op)) {
      i.kind = KInstKind::Unary;
      i.unary = *u;
      SMELT_TRY(i.a, use(c, "the operand"));
    } else if (auto b = binaryNamed(op)) {
      i.kind = KInstKind::Binary;
      i.binary = *b;
      SMELT_TRY(i.a, use(c, "the first operand"));
      if (!c.eat(",")) return fail(fmt::format("expected `,` in {}", op));
      SMELT_TRY(i.b, use(c, "the second operand"));
    } else {
      return fail(fmt::format("`{}` is not a kernel instruction", op));
    }
    if (i.kind != KInstKind::Const) {
      if (!c.eat(":")) return fail("expected `: dtype` at the end");
      SMELT_TRY(i.dtype, dtype(c));
    }
    if (i.kind == KInstKind::Load && kernel_.buffers[static_cast<size_t>(i.ibits)].dtype != i.dtype) {
      return fail("a load's dtype must be its buffer's");
    }
    if (!c.done()) return fail(fmt::format("unexpected `{}`", c.rest()));
    SMELT_CHECK_OK(define(result, i.dtype));
    stack_.back()->stmts.emplace_back(i);
    return Status::success();
  }

  /// `loop %i < E [carry(%c = %init : T, ...)] [split [partial]] [combine(op, ...)] {` (results already
  /// read).
  Status loopLine(Cursor& c, std::vector<int32_t> results) {
    if (stack_.size() >= kMaxDepth) return fail("loops nest too deep");
    auto loop = std::make_shared<KLoop>();
    auto index = valueId(c);
    if (!index || !c.eat("<")) return fail("expected `loop %i < EXTENT`");
    if (c.peek() == '%') {
      SMELT_TRY(loop->extentValue, use(c, "the loop's extent"));
      if (typeOf(loop->extentValue) != DType::i64) return fail("a loop's extent value must be i64");
    } else {
      auto extent = c.integer();
      if (!extent || *extent < 0) return fail("a loop's extent must be a non-negative integer or an i64 value");
      loop->extent = *extent;
    }
    loop->index = *index;
    std::vector<DType> carriedTypes;
    if (c.eat("carry(")) {
      do {
        auto carried = valueId(c);
        if (!carried || !c.eat("=")) return fail("expected `%carried = %init : dtype`");
        SMELT_TRY(int32_t init, use(c, "a carried value's start"));
        if (!c.eat(":")) return fail("expected `: dtype` after a carried value's start");
        SMELT_TRY(DType t, dtype(c));
        loop->carried.push_back(*carried);
        loop->init.push_back(init);
        carriedTypes.push_back(t);
      } while (c.eat(","));
      if (!c.eat(")")) return fail("expected `)` closing carry(...)");
    }
    if (results.size() != loop->carried.size()) {
      return fail(
          fmt::format("the loop has {} result(s) and carries {} value(s)", results.size(), loop->carried.size()));
    }
    loop->split = c.eat("split");
    loop->partial = loop->split && c.eat("partial");
    if (c.eat("combine(")) {
      do {
        std::string_view name = c.word();
        auto op = binaryNamed(name);
        if (!op) return fail(fmt::format("`{}` is not a combining operation", name));
        loop->combine.push_back(*op);
      } while (c.eat(","));
      if (!c.eat(")")) return fail("expected `)` closing combine(...)");
    }
    if (loop->partial && !loop->combine.empty()) return fail("a partial split loop leaves its combine to an outer loop");
    if ((loop->split && !loop->partial) || !loop->combine.empty()) {
      if (loop->combine.size() != loop->carried.size()) return fail("a combining loop combines each carried value");
    }
    if (!c.eat("{") || !c.done()) return fail("expected `{` ending the loop's line");
    SMELT_CHECK_OK(define(loop->index, DType::i64));
    for (size_t k = 0; k < loop->carried.size(); ++k) SMELT_CHECK_OK(define(loop->carried[k], carriedTypes[k]));
    loop->results = std::move(results);
    pendingResultTypes_.push_back(std::move(carriedTypes));
    stack_.back()->stmts.emplace_back(loop);
    stack_.push_back(&loop->body);
    loops_.push_back(loop.get());
    return Status::success();
  }

  Status closeLoop() {
    KLoop& loop = *loops_.back();
    if (loop.next.size() != loop.carried.size()) return fail("a loop that carries values ends with `yield`");
    for (size_t k = 0; k < loop.next.size(); ++k) {
      if (typeOf(loop.next[k]) != pendingResultTypes_.back()[k]) {
        return fail(fmt::format("yielded %{} is not the carried value's dtype", loop.next[k]));
      }
    }
    stack_.pop_back();
    loops_.pop_back();
    // The loop's values are out of scope; its results are defined after it.
    for (size_t k = 0; k < loop.results.size(); ++k) {
      SMELT_CHECK_OK(define(loop.results[k], pendingResultTypes_.back()[k]));
    }
    pendingResultTypes_.pop_back();
    return Status::success();
  }

  std::string_view text_;
  size_t line_ = 0;
  Kernel kernel_;
  std::vector<bool> defined_;
  std::vector<KBlock*> stack_;
  std::vector<KLoop*> loops_;
  std::vector<std::vector<DType>> pendingResultTypes_;
};

}  // namespace

Expected<Kernel> parseKernel(std::string_view text) { return Parser(text).run(); }

}  // namespace smelt::codegen
