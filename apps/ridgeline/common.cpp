#include "common.hpp"

#include <fmt/format.h>

#include <cmath>
#include <iostream>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/text.hpp"
#include "ridgeline/report/json.hpp"
#include "ridgeline/core/units.hpp"
#include "ridgeline/io/hardware_file.hpp"
#include "ridgeline/io/model_file.hpp"

namespace ridgeline::cli {

void add_hardware_flags(CLI::App* app, HardwareFlags& f) {
  app->add_option("--hw", f.hw, "catalog name (see `ridgeline hw list`) or a hardware .yaml file")->capture_default_str();
  app->add_option("--peak", f.peaks, "override a dense matrix peak, DTYPE=RATE (e.g. int8=3.94e14), repeatable");
  app->add_option("--mem-bw", f.mem_bw, "override main-memory bandwidth (e.g. 8.1e11 or '4.8 TB/s')");
  app->add_option("--link-bw", f.link_bw, "override the per-direction bandwidth of the communication link");
  app->add_option("--chips", f.chips, "number of chips");
  app->add_option("--slice", f.slice, "a TPU slice's shape, AxB or AxBxC (default: the most cubic shape of --chips)");
}

void hide_flags(CLI::App* app, std::initializer_list<const char*> flags) {
  for (const char* flag : flags) app->get_option(flag)->group("");
}

void refuse_chips_for_profiles(const HardwareFlags& f) {
  if (!f.chips.empty() || !f.slice.empty()) {
    throw InputError(fmt::format("{}: a profile is placed on one chip's roofline: --chips and --slice do not apply", f.chips.empty() ? "--slice" : "--chips"));
  }
}

hw::System load_system(const HardwareFlags& f) {
  hw::ChipSpec chip = io::resolve_chip(f.hw);
  hw::HardwareOverrides o;
  for (const auto& p : f.peaks) {
    auto eq = p.find('=');
    if (eq == std::string::npos) throw InputError(fmt::format("--peak: '{}' is not DTYPE=RATE (e.g. bf16=989e12)", p));
    DType t = parse_dtype_or_throw(p.substr(0, eq), "--peak");
    double r = parse_quantity(p.substr(eq + 1), Quantity::flop_rate, "--peak", true);
    if (!(r > 0)) throw InputError(fmt::format("--peak: '{}' must be greater than zero", p));
    for (const auto& [seen, rate] : o.matrix_peaks) {
      if (seen == t) throw InputError(fmt::format("--peak: {} is given twice ({} and {}): give each dtype once", name(t), rate, r));
    }
    o.matrix_peaks.emplace_back(t, r);
  }
  if (!f.mem_bw.empty()) {
    double v = parse_quantity(f.mem_bw, Quantity::bandwidth, "--mem-bw", true);
    if (!(v > 0)) throw InputError(fmt::format("--mem-bw: '{}' must be greater than zero", f.mem_bw));
    o.mem_bandwidth_Bps = v;
  }
  if (!f.link_bw.empty()) {
    double v = parse_quantity(f.link_bw, Quantity::bandwidth, "--link-bw", true);
    if (!(v > 0)) throw InputError(fmt::format("--link-bw: '{}' must be greater than zero", f.link_bw));
    o.link_bandwidth_Bps = v;
  }
  if (!f.chips.empty()) {
    long long n = parse_positive_int(f.chips, "--chips");
    if (n > (1 << 24)) throw InputError(fmt::format("--chips: {} is more than 16777216 chips", n));
    o.chips = static_cast<int>(n);
  }
  hw::System sys = hw::make_system(std::move(chip), o);
  if (!f.slice.empty()) {
    const hw::TopologySpec& t = sys.chip.topology;
    if (t.fabric != hw::Fabric::torus) {
      throw InputError(fmt::format("--slice: {} is not a torus ({} fabric): --slice is for TPU slices", sys.chip.name, hw::name(t.fabric)));
    }
    const std::vector<std::string> parts = split_list(f.slice, 'x');
    if (parts.empty() || static_cast<int>(parts.size()) > t.torus_dims) {
      throw InputError(fmt::format("--slice: '{}' is not a shape of at most {} axes: expected AxB{}", f.slice, t.torus_dims, t.torus_dims == 3 ? "xC" : ""));
    }
    long long product = 1;
    for (std::size_t a = 0; a < parts.size(); ++a) {
      const long long n = parse_positive_int(parts[a], "--slice");
      if (n > 4096) throw InputError(fmt::format("--slice: axis of {} chips: expected at most 4096", n));
      sys.slice[a] = static_cast<int>(n);
      product *= n;
    }
    for (std::size_t a = parts.size(); a < 3; ++a) sys.slice[a] = 1;
    if (t.max_slice > 0 && product > t.max_slice) {
      throw InputError(fmt::format("--slice: {} is {} chips, more than a {} pod's {}", f.slice, product, sys.chip.name, t.max_slice));
    }
    if (f.chips.empty()) sys.chips = static_cast<int>(product);
    if (sys.chips % product != 0) {
      throw InputError(fmt::format("--slice: {} is {} chips, which do not divide --chips {}: give the shape of one slice", f.slice, product, sys.chips));
    }
  }
  return sys;
}

void add_run_flags(CLI::App* app, RunFlags& f) {
  app->add_option("--tokens", f.tokens, "train this many tokens (15T, 2e12): steps, days, GPU-hours and cost of the run");
  app->add_option("--days", f.days, "train for this many days: the tokens they hold (with --tokens: whether it fits)");
  app->add_option("--price", f.prices, "USD per GPU-hour, e.g. 2.5/h, or h100-sxm=2.5/h for one chip of --hw (repeatable; default: the chip file's price_per_hour)");
}

void add_overlap_flags(CLI::App* app, OverlapFlags& f) {
  app->add_option("--overlap-efficiency", f.efficiency,
                  "the fraction of hideable communication (DP/ZeRO/FSDP, TP overlap) that hides behind compute: 1 all it can, 0 none")
      ->capture_default_str();
  app->add_option("--framework", f.preset, "whose defaults: megatron (Megatron-Core, NeMo), megatron-lm (Megatron-LM before Megatron-Core, 2021-2022) or fsdp2 (PyTorch DDP / FSDP2)")
      ->capture_default_str();
  app->add_option("--prefetch", f.prefetch, "ZeRO-3/FSDP: layers gathered ahead of the one computing")->capture_default_str();
  app->add_option("--grad-reduce-dtype", f.grad_dtype, "dtype gradients are accumulated and reduced in: fp32, bf16 or fp16")
      ->capture_default_str();
}

void apply_overlap_flags(const OverlapFlags& f, analysis::TrainConfig& c) {
  c.overlap_efficiency = parse_number(f.efficiency, "--overlap-efficiency");
  if (!(c.overlap_efficiency >= 0 && c.overlap_efficiency <= 1)) {
    throw InputError(fmt::format("--overlap-efficiency: {} is not a fraction in [0, 1]", f.efficiency));
  }
  if (f.preset == "megatron") c.framework = analysis::Framework::megatron;
  else if (f.preset == "fsdp2") c.framework = analysis::Framework::fsdp2;
  else if (f.preset == "megatron-lm") c.framework = analysis::Framework::megatron_lm;
  else throw InputError(fmt::format("--framework: '{}' is not megatron, megatron-lm or fsdp2", f.preset));
  const double p = parse_number(f.prefetch, "--prefetch");
  if (!(p >= 0 && p <= 64) || p != std::floor(p)) throw InputError(fmt::format("--prefetch: {} is not a whole number of layers from 0 to 64", f.prefetch));
  c.prefetch = static_cast<int>(p);
  const DType g = parse_dtype_or_throw(f.grad_dtype, "--grad-reduce-dtype");
  if (g != DType::fp32 && g != DType::bf16 && g != DType::fp16) {
    throw InputError(fmt::format("--grad-reduce-dtype: {} is not fp32, bf16 or fp16", f.grad_dtype));
  }
  c.grad_reduce_dtype = g;
}

report::RunReport run_goal(const RunFlags& f, const hw::ChipSpec& chip, const HardwareFlags& hw) {
  report::RunReport run;
  if (!f.tokens.empty()) {
    run.goal.tokens = parse_quantity(f.tokens, Quantity::count, "--tokens", true);
    if (!(run.goal.tokens >= 1) || run.goal.tokens > 1e18) {
      throw InputError(fmt::format("--tokens: '{}': expected a token count from 1 to 10^18", f.tokens));
    }
  }
  if (!f.days.empty()) {
    run.goal.days = parse_number(f.days, "--days");
    if (!(run.goal.days > 0) || run.goal.days > 36500) throw InputError(fmt::format("--days: '{}': expected more than 0 and at most 36500 days", f.days));
  }
  if (!analysis::wanted(run.goal)) {
    if (!f.prices.empty()) throw InputError("--price: prices a run: give --tokens or --days with it");
    return run;
  }
  const std::string& listed = hw.listed.empty() ? hw.hw : hw.listed;  // every chip of the run, side by side or not
  const std::vector<std::string> names = split_list(listed);
  // Each chip priced once: a price for every chip (USD/h) and one for a chip (CHIP=USD/h), or
  // two for one chip, would leave one of them silently unused.
  std::vector<std::string> priced;
  for (const std::string& p : f.prices) {
    const std::size_t eq = p.find('=');
    const std::string who = eq == std::string::npos ? std::string("*") : p.substr(0, eq);
    for (const std::string& other : priced) {
      if (other == who || other == "*" || who == "*") {
        throw InputError(fmt::format("--price: '{}' prices {} again: give each chip one price (CHIP=USD/h), or one USD/h for all", p,
                                     who == "*" ? std::string("every chip") : who));
      }
    }
    priced.push_back(who);
  }
  for (const std::string& p : f.prices) {
    std::string_view price = p;
    if (const std::size_t eq = price.find('='); eq != std::string_view::npos) {
      const std::string name(price.substr(0, eq));
      if (std::find(names.begin(), names.end(), name) == names.end() && name != chip.name) {
        throw InputError(fmt::format("--price: '{}' is not a chip trained on (--hw {})", name, listed));
      }
      price = price.substr(eq + 1);
      const double usd = parse_usd_per_hour(price, fmt::format("--price {}", name));
      if (name != chip.name && name != hw.hw) continue;  // another chip's
      run.goal.usd_per_gpu_hour = usd;
    } else {
      run.goal.usd_per_gpu_hour = parse_usd_per_hour(price, "--price");
    }
    run.price_source = "--price";
  }
  if (run.price_source.empty() && chip.usd_per_hour > 0) {
    run.goal.usd_per_gpu_hour = chip.usd_per_hour;
    run.price_source = "price_per_hour";
  }
  return run;
}

void add_forward_flags(CLI::App* app, ForwardFlags& f) {
  app->add_option("--model", f.model, "bundled model name (see `ridgeline models`), its Hugging Face repository (ORG/NAME) or a config.json")->capture_default_str();
  app->add_option("--tp", f.tp, "tensor-parallel degree (default --chips / --ep)");
  app->add_option("--ep", f.ep, "expert-parallel groups (attention data-parallel across them)")->capture_default_str();
  app->add_option("--experts", f.experts,
                  "MoE: how each group of --tp chips splits the experts: tp (each expert's width over them) or ep (whole experts over "
                  "them, attention staying tensor-parallel: vLLM's --enable-expert-parallel, SGLang's and TensorRT-LLM's MoE EP)")
      ->capture_default_str();
  app->add_option("--weight-dtype", f.weight_dtype, "weights (default: the checkpoint's, quantised modules kept; under 16 bits the linear layers only, the embedding and LM head kept, docs/models.md#quantised-weights)");
  app->add_option("--kv-dtype", f.kv_dtype, "KV cache (default --act-dtype)");
  app->add_option("--act-dtype", f.act_dtype, "activations")->capture_default_str();
  app->add_option("--compute-dtype", f.compute_dtype, "matrix-unit dtype (default: fp8 weights on a chip with fp8 compute run in fp8, W8A8; else from weights and activations)");
  app->add_option("--attention", f.attention, "flash or naive")->capture_default_str();
  app->add_option("--algo", f.algo, "collective algorithm: auto, ring, tree, direct, nvls (default auto: the fastest for the size; serve's engines: direct under each engine's size limit, NCCL's fastest above it)");
  app->add_flag("--sequence-parallel", f.sequence_parallel, "norms and residuals split over tp; reduce-scatter + all-gather");
  app->add_option("--expert-imbalance", f.expert_imbalance,
                  "MoE under expert parallelism: routed tokens of the busiest chip over the mean (1: balanced, up to the "
                  "expert-parallel size; auto: for each step's tokens, the model's measured routing skew where its file has one, else a "
                  "balanced router's expectation, docs/serving.md#moe-layouts)")
      ->capture_default_str();
  app->add_option("--kernels", f.kernels,
                  "unfused, or merged: QKV and gate-up as one GEMM each, residual adds inside the next norm (default unfused; serve's "
                  "engines: merged)");
  app->add_option("--block-fp8-gemms", f.block_fp8_gemms,
                  "triton or deepgemm: the kernel of fp8 block-scaled GEMMs (DeepSeek's 128x128 blocks), vLLM's Triton kernel or "
                  "DeepGEMM's, each priced by its kernel curve (default triton; serve's engines: the one their release calls)");
  app->add_option("--moe-a2a", f.moe_a2a,
                  "pairs, gather or deepep: how expert parallelism between attention data-parallel groups moves the tokens, an "
                  "all-to-all of every token-expert pair in the activations' dtype, every group's tokens all-gathered to every chip "
                  "and the outputs reduce-scattered, or DeepEP's kernels (fp8 out, bf16 back; low-latency up to 128 tokens a chip, "
                  "above them each token once per node holding its experts, docs/serving.md#deepep) (default pairs; serve's "
                  "engines: gather)");
}

void add_spec_flags(CLI::App* app, SpecFlags& f) {
  app->add_option("--draft", f.draft,
                  "speculative decoding: the draft, a model (bundled or config.json) of the target's vocabulary, or mtp (one "
                  "multi-token-prediction layer of the target's shape sharing its embedding and head)");
  app->add_option("--spec-tokens", f.tokens, "draft tokens verified per step (default: as many as --accept rates)");
  app->add_option("--accept", f.accept,
                  "acceptance rate of a draft token, one for every position or one per position (as measured: 0.9,0.8,0.7)");
}

model::Speculation speculation(const SpecFlags& f, const model::ModelConfig& target, model::ModelConfig& draft) {
  model::Speculation s;
  if (f.draft.empty()) {
    if (!f.tokens.empty() || !f.accept.empty()) throw InputError("--spec-tokens/--accept: speculative decoding needs --draft MODEL or mtp");
    return s;
  }
  if (f.accept.empty()) throw InputError("--accept: give the draft's acceptance rate (as measured on the workload, e.g. 0.7)");
  if (!f.tokens.empty()) {
    const std::int64_t k = parse_positive_int(f.tokens, "--spec-tokens");
    if (k > model::Speculation::kMaxTokens) {
      throw InputError(fmt::format("--spec-tokens: {} is out of range: expected 1 to {}", k, model::Speculation::kMaxTokens));
    }
    s.k = static_cast<int>(k);
  }
  model::parse_accept(f.accept, s);
  if (s.k == 0) throw InputError("--spec-tokens: give the draft tokens per step (or one --accept rate per draft position)");
  s.mtp = f.draft == "mtp";
  try {
    draft = s.mtp ? model::mtp_draft(target) : io::resolve_model(f.draft);
  } catch (const InputError& e) {
    // resolve_model names --model; here the name came with --draft.
    std::string what = e.what();
    if (what.rfind("--model: ", 0) == 0) what = "--draft: " + what.substr(9);
    throw InputError(what);
  }
  s.draft = &draft;
  model::validate(target, s);
  return s;
}

model::ForwardConfig::MoeA2A parse_moe_a2a(const std::string& v) {
  if (v == "deepep") return model::ForwardConfig::MoeA2A::deepep;
  if (v == "gather") return model::ForwardConfig::MoeA2A::gather;
  if (!v.empty() && v != "pairs") throw InputError(fmt::format("--moe-a2a: '{}' is not a way to move tokens: expected pairs, gather or deepep", v));
  return model::ForwardConfig::MoeA2A::pairs;
}

model::ForwardConfig forward_config(const ForwardFlags& f, const HardwareFlags& hw, const model::ModelConfig& m) {
  model::ForwardConfig fw;
  fw.ep = parse_positive_int(f.ep, "--ep");
  const std::int64_t chips = hw.chips.empty() ? 0 : parse_positive_int(hw.chips, "--chips");
  if (!f.tp.empty()) {
    fw.tp = parse_positive_int(f.tp, "--tp");
  } else if (chips > 0) {
    if (chips % fw.ep != 0) throw InputError(fmt::format("--chips: {} is not a multiple of --ep {}", chips, fw.ep));
    fw.tp = chips / fw.ep;
    if (fw.tp > 4096 || m.heads % fw.tp != 0) {
      throw InputError(fmt::format("--chips: {} chips as tensor parallelism {} do not divide the {} heads of {}: set --tp and --ep",
                                   chips, fw.tp, m.heads, m.name));
    }
  }
  if (chips > 0 && chips != fw.tp * fw.ep) {
    throw InputError(fmt::format("--chips: {} is not --tp {} x --ep {}", chips, fw.tp, fw.ep));
  }
  auto& p = fw.precision;
  p.activation = parse_dtype_or_throw(f.act_dtype, "--act-dtype");
  if (!f.weight_dtype.empty()) p.weight = parse_dtype_or_throw(f.weight_dtype, "--weight-dtype");
  if (!f.kv_dtype.empty()) p.kv_cache = parse_dtype_or_throw(f.kv_dtype, "--kv-dtype");
  if (!f.compute_dtype.empty()) p.compute = parse_dtype_or_throw(f.compute_dtype, "--compute-dtype");
  if (f.attention == "flash") fw.attention = ops::AttentionImpl::flash;
  else if (f.attention == "naive") fw.attention = ops::AttentionImpl::naive;
  else throw InputError(fmt::format("--attention: '{}' is not an implementation: expected flash or naive", f.attention));
  fw.algo = comm::algo_flag(f.algo);
  fw.sequence_parallel = f.sequence_parallel;
  if (f.expert_imbalance == "auto") fw.expert_imbalance = 0;  // model::routing_imbalance
  else if (!f.expert_imbalance.empty()) {
    fw.expert_imbalance = parse_number(f.expert_imbalance, "--expert-imbalance");
    if (fw.expert_imbalance == 0) throw InputError("--expert-imbalance: 0 is out of range: expected auto, or 1 (balanced) up to the expert-parallel size");
  }
  if (f.experts == "ep") fw.experts = model::ForwardConfig::Experts::expert;
  else if (f.experts != "tp") throw InputError(fmt::format("--experts: '{}' is not a layout: expected tp or ep", f.experts));
  if (f.kernels == "merged") fw.merged_kernels = true;
  else if (!f.kernels.empty() && f.kernels != "unfused") {
    throw InputError(fmt::format("--kernels: '{}' is not unfused or merged", f.kernels));
  }
  if (f.block_fp8_gemms == "deepgemm") fw.scaled_gemm = model::ForwardConfig::ScaledGemm::deepgemm;
  else if (!f.block_fp8_gemms.empty() && f.block_fp8_gemms != "triton") {
    throw InputError(fmt::format("--block-fp8-gemms: '{}' is not a kernel: expected triton or deepgemm", f.block_fp8_gemms));
  }
  fw.moe_a2a = parse_moe_a2a(f.moe_a2a);
  if (fw.moe_a2a == model::ForwardConfig::MoeA2A::deepep && (fw.ep < 2 || !m.is_moe())) {
    throw InputError(fmt::format("--moe-a2a: deepep moves tokens between expert-parallel groups, and {} has none: expected a MoE "
                                 "model at --ep 2 or more", m.is_moe() ? fmt::format("--ep {}", fw.ep) : m.name + " (dense)"));
  }
  // CUDA-only kernels asked for on a chip they do not run on (docs/hardware.md#arch): DeepGEMM's
  // (compute capability 9.x and 10.x) and DeepEP's (NVSHMEM over NVIDIA GPUs; on ROCm SGLang's
  // all-to-all is MORI's, not modelled).
  const bool deepgemm = fw.scaled_gemm == model::ForwardConfig::ScaledGemm::deepgemm;
  const bool deepep = fw.moe_a2a == model::ForwardConfig::MoeA2A::deepep;
  if ((deepgemm || deepep) && hw.hw.find(',') == std::string::npos) {
    const hw::ChipSpec chip = load_chip_system(hw).chip;
    const std::string what = chip.arch.empty() ? fmt::format("a {} {} without `arch`", chip.vendor, chip.kind) : chip.arch;
    if (deepgemm && !hw::runs_deepgemm(chip)) {
      throw InputError(fmt::format("--block-fp8-gemms: deepgemm: DeepGEMM runs on compute capability 9.x and 10.x, and {} is {}; "
                                   "expected triton there",
                                   chip.name, what));
    }
    if (deepep && !hw::may_be_nvidia_gpu(chip)) {
      throw InputError(fmt::format("--moe-a2a: deepep: DeepEP runs on NVIDIA GPUs, and {} is {}; expected pairs or gather there",
                                   chip.name, what));
    }
  }
  return fw;
}

hw::System load_chip_system(const HardwareFlags& f) {
  HardwareFlags g = f;
  g.chips.clear();
  return load_system(g);
}

DType tensor_dtype(const std::string& value, const hw::ChipSpec& chip) {
  if (value.empty()) {
    // The narrowest float the chip's matrix unit runs: bf16, or fp16 (T4, V100), or fp32 /
    // fp64 (a CPU measured without bf16).
    for (const DType d : {DType::bf16, DType::fp16, DType::fp32, DType::fp64}) {
      if (chip.peak(hw::Unit::matrix, d) > 0) return d;
    }
  }
  const DType t = parse_dtype_or_throw(value.empty() ? "bf16" : value, "--tensor-dtype");
  if (chip.peak(hw::Unit::matrix, t) > 0) return t;
  std::string have;
  for (const DType d : kAllDTypes) {
    if (chip.peak(hw::Unit::matrix, d) > 0) have += (have.empty() ? "" : ", ") + std::string(name(d));
  }
  throw InputError(fmt::format("--tensor-dtype: {} has no matrix rate on {}: expected one of {}", value, chip.name, have.empty() ? "none" : have));
}

hw::System profile_system(const HardwareFlags& f, bool hw_given, const profile::Profile& p, std::string& warning) {
  const std::string traced = p.device_name.empty() ? "" : io::catalog_name_for_device(p.device_name, p.device_memory_bytes);
  HardwareFlags g = f;
  if (!hw_given && !traced.empty()) {
    g.hw = traced;
  } else if (!hw_given && !p.device_name.empty()) {
    warning = fmt::format("the trace ran on {}, which the catalog does not have: analysed as {} (pass --hw)", p.device_name, f.hw);
  }
  hw::System sys = load_chip_system(g);
  if (hw_given && !traced.empty() && traced != sys.chip.name) {
    warning = fmt::format("--hw {} but the trace ran on {} ({})", f.hw, p.device_name, traced);
  }
  return sys;
}

std::vector<std::string> split_list(const std::string& s, char sep) {
  std::vector<std::string> out;
  for (std::size_t pos = 0; pos <= s.size();) {
    const std::size_t c = std::min(s.find(sep, pos), s.size());
    out.push_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  return out;
}

int parse_threads(const std::string& value) {
  if (value.empty()) return 0;
  const auto t = parse_positive_int(value, "--threads");
  if (t > 4096) throw InputError(fmt::format("--threads: {} is above 4096", t));
  return static_cast<int>(t);
}

std::vector<std::string> chip_names(const std::string& hw, std::string_view where) {
  std::vector<std::string> names;
  // Catalog names are case-insensitive (h200 is H200); a file is its path.
  auto key = [](const std::string& n) {
    if (n.find('/') != std::string::npos || n.find('.') != std::string::npos) return n;
    return ascii_lower(n);
  };
  for (const std::string& item : split_list(hw)) {
    if (item.empty()) throw InputError(fmt::format("--hw: '{}' has an empty item: expected chips separated by commas", hw));
    for (const std::string& seen : names) {
      if (key(seen) == key(item)) {
        throw InputError(fmt::format("--hw: '{}' names {} again ('{}'): give each chip once", hw, seen, item));
      }
    }
    names.push_back(item);
  }
  if (names.size() > 16) throw InputError(fmt::format("--hw: {} chips; at most 16 {}", names.size(), where));
  return names;
}

namespace {
std::vector<nlohmann::json>* g_captured = nullptr;  // per_chip: the documents of the runs
}  // namespace

void per_chip(HardwareFlags& hw, bool& json, std::span<const report::Headline> rows, const std::function<void()>& body) {
  if (hw.hw.find(',') == std::string::npos) {
    body();
    return;
  }
  const std::vector<std::string> names = chip_names(hw.hw, "side by side");
  const HardwareFlags all = hw;
  const bool wanted_json = json;
  std::vector<nlohmann::json> docs;
  struct Restore {
    HardwareFlags& hw;
    const HardwareFlags& all;
    bool& json;
    bool was;
    ~Restore() {
      hw = all;
      json = was;
      g_captured = nullptr;
    }
  } restore{hw, all, json, wanted_json};
  g_captured = &docs;
  json = true;
  for (const std::string& n : names) {
    hw.hw = n;
    hw.listed = all.hw;
    const std::size_t before = docs.size();
    body();
    if (docs.size() == before) docs.emplace_back(nlohmann::json{{"hw", n}});
  }
  g_captured = nullptr;
  if (wanted_json) {
    emit(true, nlohmann::json(docs), "");
  } else {
    emit(false, {}, report::side_by_side_text(docs, rows));
  }
}

void emit(bool json, nlohmann::json j, const std::string& text) {
  if (g_captured) {
    g_captured->push_back(std::move(j));
    return;
  }
  if (json) {
    report::integral_numbers(j);  // the caller's document is ours (moved in, or copied once)
    *out_stream() << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    *out_stream() << valid_utf8(text);
  }
}

void emit_advice(bool json, const std::vector<analysis::Advice>& advice) {
  nlohmann::json j = nlohmann::json::array();
  std::string text;
  for (const auto& a : advice) {
    j.push_back({{"rule", a.rule}, {"trigger", a.trigger}, {"gain_s", a.gain_s}, {"per", a.scope}, {"fix", a.fix}, {"source", a.source}});
    text += fmt::format("* {}  {}\n  because {}\n  fix: {}\n  ({})\n\n", a.rule,
                        a.gain_s > 0 ? fmt::format("saves ~{} per {}", format_quantity(a.gain_s, Quantity::time), a.scope) : std::string(),
                        a.trigger, a.fix, a.source);
  }
  if (advice.empty()) text = "no rule fired: nothing stands out in these numbers\n";
  emit(json, nlohmann::json{{"advice", j}}, text);
}

}  // namespace ridgeline::cli
