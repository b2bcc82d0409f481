#pragma once
/// Speculative decoding (docs/serving.md#speculative-decoding): a draft proposes k tokens per
/// sequence, the target verifies them in one step of k + 1 tokens per sequence and keeps the
/// accepted prefix and one token of its own. The draft is another model of the same
/// vocabulary, or a multi-token-prediction layer of the target's own shape (DeepSeek-V3's
/// MTP module, EAGLE-style heads) sharing its embedding and LM head.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ridgeline/model/model_config.hpp"

namespace ridgeline::model {

/// How --accept gives the rates of the draft positions (docs/serving.md#speculative-decoding).
enum class AcceptForm : std::uint8_t {
  alpha,        ///< "0.7": one rate α for each position given the ones before (Leviathan et al.)
  conditional,  ///< "conditional:0.9,0.8": position i's acceptance given positions 1..i-1 accepted
  vllm          ///< "0.8,0.7" or "vllm:0.8,0.7": as vLLM reports them, accepted at position i / drafts,
                ///< the probability that positions 1..i were all accepted (mean length 1 + their sum)
};
std::string_view name(AcceptForm f) noexcept;

struct Speculation {
  static constexpr int kMaxTokens = 16;
  int k = 0;  ///< draft tokens per step (0: plain decoding)
  /// Acceptance of draft token i given that tokens 1..i-1 were accepted (one rate α repeated,
  /// or measured per position): what `given` says, in this one form.
  std::array<double, kMaxTokens> accept{};
  AcceptForm form = AcceptForm::alpha;      ///< the form --accept gave
  std::array<double, kMaxTokens> given{};   ///< the rates as given, in `form`
  int given_count = 0;                      ///< how many were given (1 for alpha)
  const ModelConfig* draft = nullptr;  ///< the draft's forward pass (for mtp: mtp_draft of the target)
  bool mtp = false;  ///< the draft shares the target's embedding and LM head (their weights counted once)
  bool on() const noexcept { return k > 0; }
};

/// Expected tokens a sequence emits per verification step: 1 + Σ_i Π_{j≤i} a_j, which for
/// one rate α is (1 - α^(k+1)) / (1 - α). 1 when speculation is off.
double tokens_per_step(const Speculation& s) noexcept;
/// The same for one rate α over k drafts.
double tokens_per_step(double alpha, int k) noexcept;

/// The acceptance rate α at which a step of the cost `ratio` times a plain decode step
/// breaks even, (1 - α^(k+1)) / (1 - α) = ratio: 0 when ratio <= 1; nullopt when even
/// α = 1 (k + 1 tokens a step) does not pay for it.
std::optional<double> break_even_accept(int k, double ratio) noexcept;

/// One multi-token-prediction layer of `m`: its last layer's kind (MoE or dense, its
/// attention), with the target's embedding and head.
ModelConfig mtp_draft(const ModelConfig& m);

/// Parses --accept: one rate "0.7" (α, for every position), vLLM's per-position rates
/// "0.9,0.8,0.6" or "vllm:0.9,0.8,0.6" (non-increasing), or conditional ones
/// "conditional:0.9,0.8,0.6" (then k is their count unless `k` is given); `accept` gets the
/// conditional form. Throws InputError naming the flag.
void parse_accept(std::string_view text, Speculation& s);
/// The --accept argument giving the first `k` positions as `s` was given (parse_accept's inverse).
std::string accept_arg(const Speculation& s, int k);

/// Throws InputError naming the flag: k out of 1..16, rates outside [0, 1], a draft of
/// another vocabulary than the target's.
void validate(const ModelConfig& target, const Speculation& s);

}  // namespace ridgeline::model
