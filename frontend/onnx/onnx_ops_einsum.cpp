// Einsum, composed from transpose, reshape, reduce_sum, gather (diagonals) and batched matmul: each operand's repeated
// labels become a diagonal, labels no one else needs are summed out, and operands are contracted left to right, each
// pair as one matmul over [batch..., rows, contracted] and [batch..., contracted, columns] (numpy's einsum with
// optimize=False reads the same way).
#include "frontend/onnx/onnx_index_helpers.h"

#include <functional>
#include <set>

namespace smelt::onnximport {

namespace {

// A label per dimension: a letter's character code, or kEllipsis + j for the j-th broadcast dimension of the ellipsis
// (aligned from the right across operands, as numpy broadcasts).
constexpr int kEllipsis = 1000;
using Labels = std::vector<int>;

struct Term {
  Value* value;
  Labels labels;
};

Expected<std::vector<std::string>> splitTerms(const std::string& s) {
  std::vector<std::string> terms{""};
  for (char c : s) {
    if (c == ',') {
      terms.emplace_back();
    } else {
      terms.back() += c;
    }
  }
  return terms;
}

// A term's labels for an operand of `rank` dims, its ellipsis standing for `ellipsisRank` of the `maxEllipsis`
// broadcast dimensions.
Expected<Labels> parseTerm(const std::string& term, int64_t rank, int64_t maxEllipsis, bool isOutput) {
  Labels labels;
  size_t dots = term.find("...");
  int64_t letters = 0;
  for (char c : term) letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
  for (size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (i == dots) {
      int64_t e = isOutput ? maxEllipsis : rank - letters;
      if (e < 0) return makeError("term '{}' names more dimensions than its operand's {}", term, rank);
      for (int64_t j = maxEllipsis - e; j < maxEllipsis; ++j) labels.push_back(kEllipsis + static_cast<int>(j));
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      labels.push_back(c);
    } else {
      return makeError("term '{}' holds '{}': only letters and one '...' are allowed", term, c);
    }
  }
  if (!isOutput && static_cast<int64_t>(labels.size()) != rank) {
    return makeError("term '{}' has {} labels for an operand of rank {}", term, labels.size(), rank);
  }
  return labels;
}

std::vector<int64_t> axesOf(const Labels& labels, const std::function<bool(int)>& pick) {
  std::vector<int64_t> axes;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (pick(labels[i])) axes.push_back(static_cast<int64_t>(i));
  }
  return axes;
}

// Replaces two dimensions with one label by their diagonal, until every label appears once.
Expected<Term> takeDiagonals(NodeContext& n, Term t) {
  for (;;) {
    size_t p = 0, q = 0;
    for (size_t i = 0; i < t.labels.size() && !q; ++i) {
      for (size_t j = i + 1; j < t.labels.size(); ++j) {
        if (t.labels[i] == t.labels[j]) {
          p = i, q = j;
          break;
        }
      }
    }
    if (!q) return t;
    int64_t size = t.value->shape()[p];
    if (isSymbolic(size) || size != t.value->shape()[q]) {
      return makeError("a diagonal needs equal static dimensions, got {} and {}", extentToString(size),
                       extentToString(t.value->shape()[q]));
    }
    std::vector<int64_t> perm;
    Labels rest;
    for (size_t i = 0; i < t.labels.size(); ++i) {
      if (i != p && i != q) {
        perm.push_back(static_cast<int64_t>(i));
        rest.push_back(t.labels[i]);
      }
    }
    perm.push_back(static_cast<int64_t>(p));
    perm.push_back(static_cast<int64_t>(q));
    SMELT_TRY(Value * moved, n.emit("transpose", {t.value}, {{"perm", perm}}));
    std::vector<int64_t> merged(moved->shape().begin(), moved->shape().end() - 2);
    merged.push_back(size * size);
    SMELT_TRY(Value * flat, n.emit("reshape", {moved}, {{"shape", merged}}));
    Tensor diag(TensorType{DType::i64, {size}});
    for (int64_t i = 0; i < size; ++i) diag.setInt(i, i * (size + 1));
    SMELT_TRY(t.value, n.emit("gather", {flat, n.constant(std::move(diag))},
                              {{"axis", static_cast<int64_t>(merged.size()) - 1}}));
    rest.push_back(t.labels[p]);
    t.labels = std::move(rest);
  }
}

// Sums out the labels of `t` that `keep` does not hold.
Expected<Term> sumOut(NodeContext& n, Term t, const std::set<int>& keep) {
  std::vector<int64_t> axes = axesOf(t.labels, [&](int l) { return !keep.count(l); });
  if (axes.empty()) return t;
  SMELT_TRY(t.value, n.emit("reduce_sum", {t.value}, {{"axes", axes}, {"keepdims", int64_t{0}}}));
  Labels rest;
  for (int l : t.labels) {
    if (keep.count(l)) rest.push_back(l);
  }
  t.labels = std::move(rest);
  return t;
}

// The product of `t`'s dims at `axes` as one extent (a lone dimension may be symbolic).
Expected<int64_t> mergedExtent(const Value* v, const std::vector<int64_t>& axes) {
  if (axes.size() == 1) return v->shape()[static_cast<size_t>(axes[0])];
  int64_t p = 1;
  for (int64_t a : axes) {
    int64_t e = v->shape()[static_cast<size_t>(a)];
    if (isSymbolic(e)) return makeError("cannot merge the symbolic dimension {} with others", extentToString(e));
    p *= e;
  }
  return p;
}

// Contracts a and b over the labels they share that `keep` does not need.
Expected<Term> contract(NodeContext& n, Term a, Term b, const std::set<int>& keep) {
  std::set<int> inA(a.labels.begin(), a.labels.end()), inB(b.labels.begin(), b.labels.end());
  Labels batch, rows, cols, inner;
  for (int l : a.labels) {
    if (inB.count(l)) {
      (keep.count(l) ? batch : inner).push_back(l);
    } else {
      rows.push_back(l);
    }
  }
  for (int l : b.labels) {
    if (!inA.count(l)) cols.push_back(l);
  }
  auto position = [](const Labels& labels, int l) {
    return static_cast<int64_t>(std::find(labels.begin(), labels.end(), l) - labels.begin());
  };
  auto arrange = [&](Term& t, const std::vector<const Labels*>& groups) -> Status {
    std::vector<int64_t> perm;
    for (const Labels* g : groups) {
      for (int l : *g) perm.push_back(position(t.labels, l));
    }
    SMELT_TRY(t.value, n.emit("transpose", {t.value}, {{"perm", perm}}));
    return {};
  };
  SMELT_CHECK_OK(arrange(a, {&batch, &rows, &inner}));
  SMELT_CHECK_OK(arrange(b, {&batch, &inner, &cols}));
  for (size_t i = 0; i < inner.size(); ++i) {
    int64_t ea = a.value->shape()[batch.size() + rows.size() + i], eb = b.value->shape()[batch.size() + i];
    if (ea != eb) {
      return makeError("label '{}' is {} in one operand and {} in the other", static_cast<char>(inner[i]),
                       extentToString(ea), extentToString(eb));
    }
  }
  auto range = [](size_t from, size_t count) {
    std::vector<int64_t> r;
    for (size_t i = 0; i < count; ++i) r.push_back(static_cast<int64_t>(from + i));
    return r;
  };
  // [batch..., M, K] @ [batch..., K, N]: matmul broadcasts the batch dimensions (an ellipsis of 1s).
  SMELT_TRY(int64_t m, mergedExtent(a.value, range(batch.size(), rows.size())));
  SMELT_TRY(int64_t k, mergedExtent(a.value, range(batch.size() + rows.size(), inner.size())));
  SMELT_TRY(int64_t cn, mergedExtent(b.value, range(batch.size() + inner.size(), cols.size())));
  if (rows.empty()) m = 1;
  if (inner.empty()) k = 1;
  if (cols.empty()) cn = 1;
  std::vector<int64_t> aShape(a.value->shape().begin(),
                              a.value->shape().begin() + static_cast<std::ptrdiff_t>(batch.size()));
  std::vector<int64_t> bShape(b.value->shape().begin(),
                              b.value->shape().begin() + static_cast<std::ptrdiff_t>(batch.size()));
  std::vector<int64_t> outShape;
  for (size_t i = 0; i < batch.size(); ++i) {
    int64_t ea = aShape[i], eb = bShape[i];
    outShape.push_back(ea == 1 ? eb : ea);
  }
  for (size_t i = 0; i < rows.size(); ++i) outShape.push_back(a.value->shape()[batch.size() + i]);
  for (size_t i = 0; i < cols.size(); ++i) outShape.push_back(b.value->shape()[batch.size() + inner.size() + i]);
  aShape.insert(aShape.end(), {m, k});
  bShape.insert(bShape.end(), {k, cn});
  SMELT_TRY(Value * lhs, n.emit("reshape", {a.value}, {{"shape", aShape}}));
  SMELT_TRY(Value * rhs, n.emit("reshape", {b.value}, {{"shape", bShape}}));
  SMELT_TRY(Value * product, n.emit("matmul", {lhs, rhs}));
  SMELT_TRY(Value * shaped, n.emit("reshape", {product}, {{"shape", outShape}}));
  Labels labels = batch;
  labels.insert(labels.end(), rows.begin(), rows.end());
  labels.insert(labels.end(), cols.begin(), cols.end());
  return Term{shaped, labels};
}

Status einsum(NodeContext& n) {
  std::string eq;
  for (char c : n.attrString("equation", "")) {
    if (c != ' ') eq += c;
  }
  if (eq.empty()) return makeError("the equation attribute is required");
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  SMELT_TRY(std::vector<std::string> terms, splitTerms(lhs));
  if (terms.size() != n.numInputs()) {
    return makeError("equation '{}' has {} operand terms for {} inputs", eq, terms.size(), n.numInputs());
  }
  std::vector<Value*> values;
  int64_t maxEllipsis = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    SMELT_TRY(Value * v, n.input(i));
    values.push_back(v);
    if (terms[i].find("...") != std::string::npos) {
      int64_t letters = 0;
      for (char c : terms[i]) letters += std::isalpha(static_cast<unsigned char>(c)) ? 1 : 0;
      maxEllipsis = std::max(maxEllipsis, v->type().rank() - letters);
    }
  }
  std::vector<Term> ops;
  std::map<int, int> counts;
  for (size_t i = 0; i < terms.size(); ++i) {
    SMELT_TRY(Labels labels, parseTerm(terms[i], values[i]->type().rank(), maxEllipsis, false));
    for (int l : labels) ++counts[l];  // "ii" counts i twice: its implicit output is the trace
    SMELT_TRY(Term t, takeDiagonals(n, Term{values[i], labels}));
    ops.push_back(std::move(t));
  }
  Labels output;
  if (arrow != std::string::npos) {
    SMELT_TRY(output, parseTerm(eq.substr(arrow + 2), 0, maxEllipsis, true));
    for (int l : output) {
      if (!counts.count(l)) return makeError("output label '{}' appears in no operand", static_cast<char>(l));
    }
    if (std::set<int>(output.begin(), output.end()).size() != output.size()) {
      return makeError("the output term of '{}' repeats a label", eq);
    }
  } else {  // implicit: the broadcast dimensions, then the letters used once, in
            // alphabetical order
    for (int j = 0; j < maxEllipsis; ++j) output.push_back(kEllipsis + j);
    for (auto [l, c] : counts) {
      if (l < kEllipsis && c == 1) output.push_back(l);
    }
  }
  // What each step must keep: the output's labels and those of the operands still to come.
  auto keepAfter = [&](size_t i) {
    std::set<int> keep(output.begin(), output.end());
    for (size_t j = i + 1; j < ops.size(); ++j) keep.insert(ops[j].labels.begin(), ops[j].labels.end());
    return keep;
  };
  Term acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    std::set<int> keep = keepAfter(i);
    std::set<int> keepA = keep, keepB = keep;
    keepA.insert(ops[i].labels.begin(), ops[i].labels.end());
    keepB.insert(acc.labels.begin(), acc.labels.end());
    SMELT_TRY(acc, sumOut(n, acc, keepA));
    SMELT_TRY(Term rhs, sumOut(n, ops[i], keepB));
    SMELT_TRY(acc, contract(n, acc, rhs, keep));
  }
  SMELT_TRY(acc, sumOut(n, acc, std::set<int>(output.begin(), output.end())));
  std::vector<int64_t> perm;
  for (int l : output) {
    perm.push_back(static_cast<int64_t>(std::find(acc.labels.begin(), acc.labels.end(), l) - acc.labels.begin()));
  }
  Value* y = acc.value;
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (!identity) {
    SMELT_TRY(y, n.emit("transpose", {y}, {{"perm", perm}}));
  }
  return n.setOutput(0, y);
}

}  // namespace

void addEinsumConverters(ConverterTable& t) { t["Einsum"] = einsum; }

}  // namespace smelt::onnximport
