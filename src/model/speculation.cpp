// Speculative decoding's expected tokens per step, break-even rate and MTP draft.
#include "ridgeline/model/speculation.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "ridgeline/core/error.hpp"

namespace ridgeline::model {

double tokens_per_step(const Speculation& s) noexcept {
  double tokens = 1, run = 1;
  for (int i = 0; i < s.k && i < Speculation::kMaxTokens; ++i) {
    run *= s.accept[static_cast<std::size_t>(i)];
    tokens += run;
  }
  return tokens;
}

double tokens_per_step(double alpha, int k) noexcept {
  Speculation s;
  s.k = k;
  s.accept.fill(alpha);
  return tokens_per_step(s);
}

std::optional<double> break_even_accept(int k, double ratio) noexcept {
  if (!(ratio > 1)) return 0.0;
  if (ratio > static_cast<double>(k) + 1) return std::nullopt;
  // Tokens per step grow with α from 1 to k + 1: bisection to below 1e-12.
  double lo = 0, hi = 1;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (tokens_per_step(mid, k) < ratio ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

ModelConfig mtp_draft(const ModelConfig& m) {
  ModelConfig d = m;
  d.name = m.name + " MTP";
  d.layers = 1;
  d.mtp_layers = 0;
  const bool moe_last = m.moe_layer(m.layers - 1);
  d.moe.first_dense_layers = moe_last ? 0 : 1;
  d.moe.layer_freq = 1;
  if (!moe_last) d.moe.experts = 0, d.moe.experts_per_token = 0, d.moe.shared_experts = 0;
  // The last layer slides when every layer does (sliding layers come first where mixed).
  d.sliding_layers = m.sliding_layers >= m.layers ? 1 : 0;
  return d;
}

std::string_view name(AcceptForm f) noexcept {
  switch (f) {
    case AcceptForm::alpha: return "alpha";
    case AcceptForm::conditional: return "conditional";
    case AcceptForm::vllm: return "vllm";
  }
  return "alpha";
}

void parse_accept(std::string_view text, Speculation& s) {
  // The form: a prefix names it; a list without one is vLLM's (what its metrics print), one
  // number α.
  AcceptForm form = AcceptForm::vllm;
  bool named = false;
  for (const AcceptForm f : {AcceptForm::conditional, AcceptForm::vllm}) {
    const std::string prefix = std::string(name(f)) + ":";
    if (text.substr(0, prefix.size()) == prefix) {
      form = f, named = true;
      text.remove_prefix(prefix.size());
    }
  }
  int n = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item(text.substr(start, end - start));
    start = end + 1;
    if (n >= Speculation::kMaxTokens) {
      throw InputError(fmt::format("--accept: '{}' gives more than {} rates", text, Speculation::kMaxTokens));
    }
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || !(v >= 0 && v <= 1)) {
      throw InputError(fmt::format("--accept: '{}' is not an acceptance rate: expected a number in [0, 1], "
                                   "or one per draft position as in 0.9,0.8,0.7 (vLLM's), or conditional:0.9,0.8,0.7",
                                   item));
    }
    s.given[static_cast<std::size_t>(n++)] = v;
  }
  if (n == 1 && !named) form = AcceptForm::alpha;
  if (n == 1 && form == AcceptForm::conditional) form = AcceptForm::alpha;
  s.form = form;
  s.given_count = n;
  if (form == AcceptForm::alpha) {
    s.accept.fill(s.given[0]);
  } else if (form == AcceptForm::conditional) {
    s.accept = s.given;
  } else {
    // vLLM's rate at i is P(1..i all accepted): position i given the ones before is r_i / r_{i-1}.
    double before = 1;
    for (int i = 0; i < n; ++i) {
      const double r = s.given[static_cast<std::size_t>(i)];
      if (r > before) {
        throw InputError(fmt::format("--accept: vLLM's per-position rates cannot rise ({:g} after {:g}): each is the share of "
                                     "drafts accepted up to that position; for each position's rate given the ones before, "
                                     "write conditional:{}",
                                     r, before, text));
      }
      s.accept[static_cast<std::size_t>(i)] = before > 0 ? r / before : 0;
      before = r;
    }
  }
  if (n == 1 || form == AcceptForm::alpha) {
    if (s.k > 1 && form == AcceptForm::vllm) {
      throw InputError(fmt::format("--accept: vllm:{} gives position 1 only, for --spec-tokens {}: give one rate per draft position",
                                   text, s.k));
    }
  } else if (s.k == 0) {
    s.k = n;
  } else if (s.k != n) {
    throw InputError(fmt::format("--accept: {} rates for --spec-tokens {}: give one rate, or one per draft token", n, s.k));
  }
  if (s.k == 0 && n == 1 && form == AcceptForm::vllm) s.k = 1;
}

std::string accept_arg(const Speculation& s, int k) {
  if (s.form == AcceptForm::alpha) return fmt::format("{}", s.given[0]);
  std::string out = s.form == AcceptForm::conditional ? "conditional:" : "";
  for (int i = 0; i < k && i < s.given_count; ++i) out += fmt::format("{}{}", i > 0 ? "," : "", s.given[static_cast<std::size_t>(i)]);
  return out;
}

void validate(const ModelConfig& target, const Speculation& s) {
  if (!s.on()) return;
  if (s.k < 1 || s.k > Speculation::kMaxTokens) {
    throw InputError(fmt::format("--spec-tokens: {} is out of range: expected 1 to {}", s.k, Speculation::kMaxTokens));
  }
  for (int i = 0; i < s.k; ++i) {
    const double a = s.accept[static_cast<std::size_t>(i)];
    if (!(a >= 0 && a <= 1)) throw InputError(fmt::format("--accept: {} is outside [0, 1]", a));
  }
  if (s.draft == nullptr) throw InputError("--draft: speculative decoding needs a draft: a model, or mtp");
  if (s.draft->vocab != target.vocab) {
    throw InputError(fmt::format("--draft {}: its vocabulary has {} tokens and {}'s {}: a draft must share the target's tokenizer",
                                 s.draft->name, s.draft->vocab, target.name, target.vocab));
  }
}

}  // namespace ridgeline::model
