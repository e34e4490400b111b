// Kernel description printing and counting.
#include "codegen/kernel.h"

#include "ir/printer.h"

#include <fmt/format.h>

namespace smelt::codegen {

int64_t Kernel::domainSize() const {
  int64_t n = 1;
  for (int64_t d : domain) n *= d;
  return n;
}

std::string domainText(const Kernel& kernel) {
  std::vector<std::string> extents;
  for (int64_t d : kernel.domain) extents.push_back(d == kRunTimeExtent ? "?" : std::to_string(d));
  return fmt::format("{}", fmt::join(extents, ", "));
}

namespace {

std::string v(int32_t id) { return fmt::format("%{}", id); }

class Printer {
 public:
  /// `computationOnly`: without the names and provenance (computationText()).
  Printer(const Kernel& k, bool computationOnly) : k_(k), computationOnly_(computationOnly) {}

  std::string run() {
    out_ += fmt::format("kernel @{} domain [{}]{}{}\n", computationOnly_ ? "" : k_.name, domainText(k_),
                        k_.blockThreads > 0 ? fmt::format(" threads {}", k_.blockThreads) : "",
                        k_.pointsPerThread > 1 ? fmt::format(" vector {}", k_.pointsPerThread) : "");
    if (computationOnly_) {
      if (k_.disjointBuffers) out_ += "  // disjoint buffers\n";
    } else {
      for (const std::string& p : k_.provenance) out_ += fmt::format("  // from {}\n", p);
    }
    for (size_t i = 0; i < k_.buffers.size(); ++i) {
      const KBuffer& b = k_.buffers[i];
      out_ += fmt::format("  buffer %b{}: {}[{}] {} {}{}\n", i, dtypeName(b.dtype),
                          b.numel == kRunTimeExtent ? "?" : std::to_string(b.numel), b.output ? "out" : "in",
                          computationOnly_ ? "" : quoteString(b.name),
                          b.sameAs >= 0 ? fmt::format(" same %b{}", b.sameAs) : "");
    }
    block(k_.body, "  ");
    return out_;
  }

 private:
  std::string type(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < k_.types.size() ? std::string(dtypeName(k_.types[id])) : "?";
  }

  void inst(const KInst& i, const std::string& indent) {
    std::string rhs;
    switch (i.kind) {
      case KInstKind::Const:
        rhs = isFloat(i.dtype) ? fmt::format("const {}", printFloat(i.fbits)) : fmt::format("const {}", i.ibits);
        break;
      case KInstKind::Outer: rhs = fmt::format("outer {}", i.ibits); break;
      case KInstKind::Unary: rhs = fmt::format("{} {}", kUnaryName(i.unary), v(i.a)); break;
      case KInstKind::Binary: rhs = fmt::format("{} {}, {}", kBinaryName(i.binary), v(i.a), v(i.b)); break;
      case KInstKind::Select: rhs = fmt::format("select {}, {}, {}", v(i.a), v(i.b), v(i.c)); break;
      case KInstKind::Cast: rhs = fmt::format("cast {}", v(i.a)); break;
      case KInstKind::Load: rhs = fmt::format("load %b{}[{}]", i.ibits, v(i.a)); break;
      case KInstKind::Param: rhs = fmt::format("param {}", i.ibits); break;
    }
    out_ += fmt::format("{}{} = {} : {}\n", indent, v(i.result), rhs, dtypeName(i.dtype));
  }

  void block(const KBlock& b, const std::string& indent) {
    for (const KStmt& s : b.stmts) {
      if (const KInst* i = std::get_if<KInst>(&s)) {
        inst(*i, indent);
      } else if (const KStore* st = std::get_if<KStore>(&s)) {
        out_ += fmt::format("{}store %b{}[{}] = {}\n", indent, st->buffer, v(st->offset), v(st->value));
      } else {
        const KLoop& l = *std::get<std::shared_ptr<KLoop>>(s);
        std::vector<std::string> carried, results;
        for (size_t k = 0; k < l.carried.size(); ++k) {
          carried.push_back(fmt::format("{} = {} : {}", v(l.carried[k]), v(l.init[k]), type(l.carried[k])));
          results.push_back(v(l.results[k]));
        }
        std::string head = results.empty() ? "" : fmt::format("{} = ", fmt::join(results, ", "));
        out_ += fmt::format("{}{}loop {} < {}", indent, head, v(l.index),
                            l.extentValue >= 0 ? v(l.extentValue) : std::to_string(l.extent));
        if (!carried.empty()) out_ += fmt::format(" carry({})", fmt::join(carried, ", "));
        std::vector<std::string> ops;
        for (KBinary op : l.combine) ops.emplace_back(kBinaryName(op));
        if (l.split) out_ += l.partial ? " split partial" : " split";
        if (!ops.empty()) out_ += fmt::format(" combine({})", fmt::join(ops, ", "));
        out_ += " {\n";
        block(l.body, indent + "  ");
        if (!l.next.empty()) {
          std::vector<std::string> next;
          for (int32_t n : l.next) next.push_back(v(n));
          out_ += fmt::format("{}  yield {}\n", indent, fmt::join(next, ", "));
        }
        out_ += indent + "}\n";
      }
    }
  }

  const Kernel& k_;
  bool computationOnly_;
  std::string out_;
};

void countBlock(const KBlock& b, KernelCounts& c, int64_t depth) {
  c.maxLoopDepth = std::max(c.maxLoopDepth, depth);
  for (const KStmt& s : b.stmts) {
    if (const KInst* i = std::get_if<KInst>(&s)) {
      ++c.instructions;
      c.loads += i->kind == KInstKind::Load;
    } else if (std::holds_alternative<KStore>(s)) {
      ++c.stores;
    } else {
      ++c.loops;
      countBlock(std::get<std::shared_ptr<KLoop>>(s)->body, c, depth + 1);
    }
  }
}

}  // namespace

std::string printKernel(const Kernel& kernel) { return Printer(kernel, false).run(); }

std::string computationText(const Kernel& kernel) { return Printer(kernel, true).run(); }

KernelCounts countKernel(const Kernel& kernel) {
  KernelCounts c;
  countBlock(kernel.body, c, 0);
  return c;
}

}  // namespace smelt::codegen
