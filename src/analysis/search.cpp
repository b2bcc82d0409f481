#include "ridgeline/analysis/search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

#include "ridgeline/core/error.hpp"
#include "ridgeline/ops/estimate.hpp"
#include "search_pool.hpp"

namespace ridgeline::analysis {

namespace {

using Clock = std::chrono::steady_clock;
using detail::lower_to;
using detail::Progress;
using detail::run_parallel;
using detail::stopped;

// Divisors of n not above `max`, ascending.
std::vector<std::int64_t> divisors(std::int64_t n, std::int64_t max) {
  std::vector<std::int64_t> lo, hi;
  for (std::int64_t i = 1; i * i <= n; ++i) {
    if (n % i != 0) continue;
    lo.push_back(i);
    if (i != n / i) hi.push_back(n / i);
  }
  lo.insert(lo.end(), hi.rbegin(), hi.rend());
  std::erase_if(lo, [max](std::int64_t d) { return d > max; });
  return lo;
}

template <class T>
std::vector<T> fixed_or(const std::optional<T>& v, std::vector<T> all) {
  if (v) return {*v};
  return all;
}

// The best K plans by `better` (the objective, then less memory, then enumeration order),
// and the Pareto front of (x up, y down). Each thread keeps
// one; they merge at the end. Ties break on the enumeration order, so the result does not
// depend on how the work was split between threads.
template <class Plan, class Better, class X, class Y>
struct Collector {
  Better better;
  X x;
  Y y;
  std::size_t k = 5;
  std::vector<Plan> top, front;

  Collector(Better b, X x_, Y y_, std::size_t k_) : better(b), x(x_), y(y_), k(k_) {
    top.reserve(k + 1);
    front.reserve(256);
  }
  bool dominates(const Plan& a, const Plan& b) const {
    const double ax = x(a), bx = x(b), ay = y(a), by = y(b);
    return ax >= bx && ay <= by && (ax > bx || ay < by || a.order < b.order);
  }
  // The front is kept sorted by y ascending; no member dominates another, so y and x both
  // strictly increase along it. A plan is dominated only by its predecessor (the largest x
  // at a smaller y) or by a member at its own y; it dominates a run of members starting at
  // its position (x not above its own). O(log n) to find, a short move to insert.
  void add_front(const Plan& p) {
    const double px = x(p), py = y(p);
    auto at = std::lower_bound(front.begin(), front.end(), py, [&](const Plan& f, double v) { return y(f) < v; });
    if (at != front.begin() && x(*std::prev(at)) >= px) return;
    if (at != front.end() && dominates(*at, p)) return;
    auto end = at;
    while (end != front.end() && dominates(p, *end)) ++end;
    at = front.erase(at, end);
    front.insert(at, p);
  }
  void add(const Plan& p) {
    if (k > 0 && (top.size() < k || better(p, top.back()))) {
      if (top.size() == k) top.pop_back();
      top.insert(std::upper_bound(top.begin(), top.end(), p, better), p);
    }
    add_front(p);
  }
  void merge(const Collector& o) {
    for (const Plan& p : o.top) {
      if (top.size() < k || better(p, top.back())) {
        if (top.size() == k) top.pop_back();
        top.insert(std::upper_bound(top.begin(), top.end(), p, better), p);
      }
    }
    for (const Plan& p : o.front) add_front(p);
  }
  void finish() {
    std::sort(front.begin(), front.end(), [&](const Plan& a, const Plan& b) {
      return y(a) != y(b) ? y(a) < y(b) : a.order < b.order;
    });
  }
};

// A task's plans counted, the progress and the best-so-far updated.
void end_task(SearchStats& stats, std::uint64_t count, std::atomic<std::uint64_t>& done, std::atomic<double>& best,
              double local_best) {
  stats.evaluated += count;
  done.fetch_add(count, std::memory_order_relaxed);
  lower_to(best, local_best);
}

// Every thread's counts and plans merged into the result (plans ordered, front sorted).
template <class Result, class Locals, class Coll>
Result collect(Locals& locals, Coll all, bool interrupted, Clock::time_point t0) {
  Result out;
  for (auto& L : locals) {
    out.stats.evaluated += L.stats.evaluated;
    out.stats.feasible += L.stats.feasible;
    out.stats.shapes += L.stats.shapes;
    out.stats.timed += L.stats.timed;
    for (int r = 0; r < kRejectCount; ++r) out.stats.rejected[r] += L.stats.rejected[r];
    if (L.coll) all.merge(*L.coll);
  }
  all.finish();
  out.best = std::move(all.top);
  out.pareto = std::move(all.front);
  out.stats.interrupted = interrupted;
  out.stats.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

// Best first: the objective's key (lower is better), then less memory, then enumeration order.
template <class Plan, class Key>
auto ranking(Key key) {
  return [key](const Plan& a, const Plan& b) {
    const double ka = key(a), kb = key(b);
    if (ka != kb) return ka < kb;
    return a.memory_bytes != b.memory_bytes ? a.memory_bytes < b.memory_bytes : a.order < b.order;
  };
}

double train_key(TrainObjective o, const TrainPlan& p) {
  switch (o) {
    case TrainObjective::step_time: return p.step_time_s;
    case TrainObjective::mfu: return -p.mfu;
    case TrainObjective::tokens_per_s: return -p.tokens_per_s;
  }
  return p.step_time_s;
}

double infer_key(InferObjective o, const InferPlan& p) {
  return o == InferObjective::latency ? p.e2e_s : -p.tokens_per_s_per_chip;
}

}  // namespace

TrainConfig train_config(const TrainConfig& base, const TrainPlan& p) noexcept {
  TrainConfig c = base;
  c.tp = p.tp;
  c.pp = p.pp;
  c.dp = 0;
  c.cp = p.cp;
  c.cp_ring = p.cp_ring;
  c.ep = p.ep;
  c.vpp = p.vpp;
  c.micro_batch = p.micro_batch;
  c.zero = p.zero;
  c.recompute = p.recompute;
  c.sequence_parallel = p.sequence_parallel;
  return c;
}

void validate(const model::ModelConfig& m, const hw::System& sys, const TrainSearchSpace& s) {
  const TrainConfig& b = s.base;
  if (b.gpus < 1 || b.gpus > (std::int64_t{1} << 24)) {
    throw InputError(fmt::format("--gpus: {} is out of range: expected 1 to 2^24 (as train)", b.gpus));
  }
  if (b.global_batch < 1 || b.global_batch > (std::int64_t{1} << 31)) {
    throw InputError(fmt::format("--global-batch: {} is out of range: expected 1 to 2^31 sequences", b.global_batch));
  }
  if (b.seq < 1 || b.seq > (std::int64_t{1} << 24)) throw InputError(fmt::format("--seq: {} is out of range: expected 1 to 2^24", b.seq));
  if (m.max_positions > 0 && b.seq > m.max_positions) {
    throw InputError(fmt::format("--seq: {} tokens exceed the {} positions of {} (max_position_embeddings)", b.seq, m.max_positions, m.name));
  }
  if (!(s.memory_headroom >= 0 && s.memory_headroom < 1)) {
    throw InputError(fmt::format("--memory-headroom: {} is not a fraction in [0, 1)", s.memory_headroom));
  }
  if (!(b.overlap_efficiency >= 0 && b.overlap_efficiency <= 1)) {
    throw InputError(fmt::format("--overlap-efficiency: {} is not a fraction in [0, 1]", b.overlap_efficiency));
  }
  if (b.prefetch < 0 || b.prefetch > 64) throw InputError(fmt::format("--prefetch: {} is out of range: expected 0 to 64 layers", b.prefetch));
  if (s.top < 0 || s.top > 10000) throw InputError(fmt::format("--top: {} is out of range: expected 0 to 10000", s.top));
  auto dim = [](const std::optional<std::int64_t>& v, const char* flag) {
    if (v && (*v < 1 || *v > 4096)) throw InputError(fmt::format("{}: {} is out of range: expected 1 to 4096", flag, *v));
  };
  dim(s.tp, "--tp");
  dim(s.pp, "--pp");
  dim(s.cp, "--cp");
  dim(s.ep, "--ep");
  dim(s.vpp, "--vpp");
  if (s.micro_batch && (*s.micro_batch < 1 || *s.micro_batch > b.global_batch)) {
    throw InputError(fmt::format("--micro-batch: {} is out of range: expected 1 to the global batch {}", *s.micro_batch, b.global_batch));
  }
  if (s.zero && (*s.zero < 0 || *s.zero > 3)) throw InputError(fmt::format("--zero: {} is not a ZeRO stage: expected 0 to 3", *s.zero));
  for (auto [v, flag] : {std::pair{s.tp_max, "--tp-max"}, {s.pp_max, "--pp-max"}, {s.cp_max, "--cp-max"},
                         {s.vpp_max, "--vpp-max"}, {s.micro_batch_max, "--micro-batch-max"}}) {
    if (v < 0) throw InputError(fmt::format("{}: {} is negative", flag, v));
  }
  std::int64_t fixed_product = 1;
  for (auto [v, flag] : {std::pair{s.tp, "--tp"}, {s.pp, "--pp"}, {s.cp, "--cp"}}) {
    if (!v) continue;
    if (b.gpus % *v != 0) throw InputError(fmt::format("{}: {} does not divide the {} GPUs: no plan has it", flag, *v, b.gpus));
    fixed_product *= *v;
  }
  if (b.gpus % fixed_product != 0) {
    throw InputError(fmt::format("--tp/--pp/--cp: their product {} does not divide the {} GPUs: no plan has them", fixed_product, b.gpus));
  }
  for (auto [fixed, max, flag] : {std::tuple{s.tp, s.tp_max, "--tp"}, {s.pp, s.pp_max, "--pp"}, {s.cp, s.cp_max, "--cp"},
                                  {s.vpp, s.vpp_max, "--vpp"}, {s.micro_batch, s.micro_batch_max, "--micro-batch"}}) {
    if (fixed && max > 0 && *fixed > max) throw InputError(fmt::format("{} {} is above {}-max {}: give one or the other", flag, *fixed, flag, max));
  }
  if (s.ep && *s.ep > 1 && !m.is_moe()) throw InputError(fmt::format("--ep: {} is not a mixture of experts", m.name));
  if (b.gpus > 1 && sys.chip.links.empty()) {
    throw InputError(fmt::format("--gpus: {} has no link between chips: pass --link-bw", sys.chip.name));
  }
  if (sys.chip.peak(hw::Unit::matrix, b.dtype) <= 0) {
    throw InputError(fmt::format("--dtype: {} has no {} matrix rate", sys.chip.name, name(b.dtype)));
  }
}

TrainSearchResult search_train(const model::ModelConfig& m, const hw::System& sys_in, const TrainSearchSpace& space,
                               const SearchControl& control) {
  validate(m, sys_in, space);
  const auto t0 = Clock::now();
  // --recompute auto plans against the memory the search leaves usable.
  TrainConfig base = space.base;
  base.memory_headroom = space.memory_headroom;
  const hw::System sys = training_system(sys_in, base);
  const std::int64_t gpus = base.gpus, gb = base.global_batch;
  const std::int64_t node = std::max<std::int64_t>(1, sys.chips_per_node);
  auto cap = [](std::int64_t max, std::int64_t dflt) { return max > 0 ? max : dflt; };

  // The candidate values of each dimension (docs/search.md#space).
  const auto tps = fixed_or(space.tp, divisors(gpus, cap(space.tp_max, gpus)));
  const auto cps = fixed_or(space.cp, divisors(gpus, cap(space.cp_max, gpus)));
  const auto pps = fixed_or(space.pp, divisors(gpus, cap(space.pp_max, gpus)));
  const auto vpps = fixed_or(space.vpp, divisors(m.layers, cap(space.vpp_max, m.layers)));
  const auto mbs = fixed_or(space.micro_batch, divisors(gb, cap(space.micro_batch_max, gb)));
  std::vector<std::int64_t> eps{1};
  if (m.is_moe()) eps = fixed_or(space.ep, divisors(gpus, std::min<std::int64_t>(gpus, m.moe.experts)));
  else if (space.ep) eps = {*space.ep};
  // The planner's per-activation choice (auto) beside the fixed policies.
  const std::vector<Recompute> all_rc = {Recompute::none, Recompute::selective, Recompute::full, Recompute::automatic};
  const auto rcs = fixed_or(space.recompute, all_rc);
  const auto zeros = fixed_or(space.zero, {0, 1, 2, 3});

  // Shapes: the dimensions train_shape depends on. Each is summed once per search.
  struct Shape {
    std::int64_t tp, cp, ep, mb;
    bool ring, sp;
    Recompute rc;
    Reject reject;  // a rule the shape breaks whatever the rest (Reject::count: none)
  };
  std::vector<Shape> shapes;
  for (std::int64_t tp : tps) {
    for (std::int64_t cp : cps) {
      if (gpus % (tp * cp) != 0) continue;  // no layout
      for (bool ring : cp > 1 ? fixed_or(space.cp_ring, {false, true}) : std::vector<bool>{false}) {
        for (std::int64_t ep : eps) {
          for (bool sp : tp > 1 ? fixed_or(space.sequence_parallel, {false, true}) : std::vector<bool>{false}) {
            for (std::int64_t mb : mbs) {
              for (Recompute rc : rcs) {
                Reject r = Reject::count;
                if (tp > node && !space.tp_across_nodes) r = Reject::tp_across_nodes;
                shapes.push_back({tp, cp, ep, mb, ring, sp, rc, r});
              }
            }
          }
        }
      }
    }
  }
  // The plans under each shape: pp x vpp x ZeRO, with dp = gpus / (tp·cp·pp).
  const std::vector<std::int64_t> one_vpp{1};
  const std::vector<int> zero_only{0};
  auto vpp_list = [&](std::int64_t pp) -> const std::vector<std::int64_t>& { return pp > 1 || space.vpp ? vpps : one_vpp; };
  // ZeRO shards over the dp·cp ranks that hold the same weights: with one, the stages are alike.
  auto zero_list = [&](std::int64_t dp_cp) -> const std::vector<int>& { return dp_cp > 1 || space.zero ? zeros : zero_only; };
  std::uint64_t total = 0;
  for (const Shape& sh : shapes) {
    for (std::int64_t pp : pps) {
      if (gpus % (sh.tp * sh.cp * pp) != 0) continue;
      total += vpp_list(pp).size() * zero_list(gpus / (sh.tp * pp)).size();
    }
  }

  const double capacity = sys.chip.main_capacity_bytes() * (1 - space.memory_headroom);
  const TrainObjective objective = space.objective;
  const auto better = ranking<TrainPlan>([objective](const TrainPlan& p) { return train_key(objective, p); });
  auto x = [](const TrainPlan& p) { return p.tokens_per_s; };
  auto y = [](const TrainPlan& p) { return p.memory_bytes; };
  using Coll = Collector<TrainPlan, decltype(better), decltype(x), decltype(y)>;
  struct Local {
    std::unique_ptr<TrainResult> scratch = std::make_unique<TrainResult>();
    TrainShape shape;
    TrainStep step;
    SearchStats stats;
    std::optional<Coll> coll;
  };
  detail::PerThread<Local> locals;
  std::atomic<std::uint64_t> done{0};
  std::atomic<double> best{std::numeric_limits<double>::infinity()};
  std::atomic<bool> interrupted{false};
  {
    Progress progress(control, done, total, best);
    run_parallel(control, shapes.size(), [&](std::size_t si) {
      if (stopped(control)) {
        interrupted = true;
        return;
      }
      Local& L = locals.local();
      if (!L.coll) L.coll.emplace(better, x, y, static_cast<std::size_t>(space.top));
      const Shape& sh = shapes[si];
      TrainPlan p;
      p.tp = sh.tp;
      p.cp = sh.cp;
      p.ep = sh.ep;
      p.micro_batch = sh.mb;
      p.cp_ring = sh.ring;
      p.sequence_parallel = sh.sp;
      p.recompute = sh.rc;
      bool have_shape = false;
      std::uint64_t inner = 0, count = 0;
      double local_best = std::numeric_limits<double>::infinity();
      for (std::int64_t pp : pps) {
        if (gpus % (sh.tp * sh.cp * pp) != 0) continue;
        p.pp = pp;
        p.dp = gpus / (sh.tp * sh.cp * pp);
        for (std::int64_t vpp : vpp_list(pp)) {
          p.vpp = vpp;
          for (int zero : zero_list(p.dp * sh.cp)) {
            p.zero = zero;
            p.order = (static_cast<std::uint64_t>(si) << 24) | inner++;
            ++count;
            const TrainConfig cfg = train_config(base, p);
            Reject r = sh.reject != Reject::count ? sh.reject : plan_fault(m, cfg);
            if (r == Reject::count) {
              if (!have_shape) {
                train_shape(m, sys, cfg, *L.scratch, L.shape);
                have_shape = true;
                ++L.stats.shapes;
              }
              train_step(m, sys, cfg, L.shape, L.step);
              ++L.stats.timed;
              if (L.step.memory.total_bytes > capacity) r = Reject::memory;
            }
            if (r != Reject::count) {
              ++L.stats.rejected[static_cast<int>(r)];
              continue;
            }
            ++L.stats.feasible;
            p.step_time_s = L.step.step_time_s;
            p.tokens_per_s = L.step.tokens_per_s;
            p.mfu = L.step.mfu;
            p.memory_bytes = L.step.memory.total_bytes;
            p.hidden_comm_s = L.step.hidden_comm_s;
            local_best = std::min(local_best, train_key(objective, p));
            L.coll->add(p);
          }
        }
      }
      end_task(L.stats, count, done, best, local_best);
    });
  }

  return collect<TrainSearchResult>(locals, Coll(better, x, y, static_cast<std::size_t>(space.top)), interrupted, t0);
}

// ---------------------------------------------------------------------------------------
// Serving.

InferenceConfig infer_config(const InferenceConfig& base, const InferPlan& p) noexcept {
  InferenceConfig c = base;
  c.forward.tp = p.tp;
  c.forward.ep = p.ep;
  c.batch = p.batch;
  if (p.weight_dtype) c.forward.precision.weight = *p.weight_dtype;
  if (p.kv_dtype) c.forward.precision.kv_cache = *p.kv_dtype;
  return c;
}

void validate(const model::ModelConfig& m, const hw::System& sys, const InferSearchSpace& s) {
  if (s.chips_max < 1 || s.chips_max > 4096) {
    throw InputError(fmt::format("--chips-max: {} is out of range: expected 1 to 4096", s.chips_max));
  }
  if (s.batch_max < 0 || s.batch_max > (std::int64_t{1} << 20)) {
    throw InputError(fmt::format("--batch-max: {} is out of range: expected 1 to 2^20", s.batch_max));
  }
  if (s.top < 0 || s.top > 10000) throw InputError(fmt::format("--top: {} is out of range: expected 0 to 10000", s.top));
  for (auto [v, flag] : {std::pair{s.ttft_max_s, "--ttft-max"}, {s.tpot_max_s, "--tpot-max"}}) {
    if (v && !(*v > 0)) throw InputError(fmt::format("{}: {} s is not a positive time", flag, *v));
  }
  if (s.tp && (*s.tp < 1 || *s.tp > s.chips_max)) throw InputError(fmt::format("--tp: {} is out of range: expected 1 to --chips-max {}", *s.tp, s.chips_max));
  if (s.ep && (*s.ep < 1 || *s.ep > s.chips_max)) throw InputError(fmt::format("--ep: {} is out of range: expected 1 to --chips-max {}", *s.ep, s.chips_max));
  if (s.ep && *s.ep > 1 && !m.is_moe()) throw InputError(fmt::format("--ep: {} is not a mixture of experts", m.name));
  InferenceConfig probe = s.base;
  probe.forward.tp = probe.forward.ep = 1;
  validate(m, sys, probe);  // prompt, gen, memory
  if (m.max_positions > 0 && s.base.prompt + s.base.gen > m.max_positions) {
    throw InputError(fmt::format("--prompt/--gen: {} + {} tokens exceed the {} positions of {} (max_position_embeddings)",
                                 s.base.prompt, s.base.gen, m.max_positions, m.name));
  }
}

InferSearchResult search_infer(const model::ModelConfig& m, const hw::System& sys, const InferSearchSpace& space,
                               const SearchControl& control) {
  validate(m, sys, space);
  const auto t0 = Clock::now();
  // Groups: (tp, ep, weight dtype, KV dtype); each runs every batch.
  struct Group {
    std::int64_t tp, ep;
    std::optional<DType> w, kv;
  };
  std::vector<std::optional<DType>> ws, kvs;
  for (DType d : space.weight_dtypes) ws.emplace_back(d);
  for (DType d : space.kv_dtypes) kvs.emplace_back(d);
  if (ws.empty()) ws.emplace_back();
  if (kvs.empty()) kvs.emplace_back();
  std::vector<Group> groups;
  for (std::int64_t tp = 1; tp <= space.chips_max; ++tp) {
    if (space.tp && tp != *space.tp) continue;
    for (std::int64_t ep = 1; tp * ep <= space.chips_max; ++ep) {
      if ((space.ep && ep != *space.ep) || (!space.ep && ep > 1 && !m.is_moe())) continue;
      for (const auto& w : ws) {
        for (const auto& kv : kvs) groups.push_back({tp, ep, w, kv});
      }
    }
  }
  const InferObjective objective = space.objective;
  const auto better = ranking<InferPlan>([objective](const InferPlan& p) { return infer_key(objective, p); });
  auto x = [](const InferPlan& p) { return p.tokens_per_s_per_chip; };
  auto y = [](const InferPlan& p) { return p.tpot_s; };
  using Coll = Collector<InferPlan, decltype(better), decltype(x), decltype(y)>;
  struct Local {
    std::unique_ptr<ServingCurve> curve = std::make_unique<ServingCurve>();
    std::unique_ptr<BatchModel> model;
    SearchStats stats;
    std::optional<Coll> coll;
  };
  detail::PerThread<Local> locals;
  std::atomic<std::uint64_t> done{0};
  std::atomic<double> best{std::numeric_limits<double>::infinity()};
  std::atomic<bool> interrupted{false};
  const std::uint64_t total_estimate = groups.size() * static_cast<std::uint64_t>(std::max<std::int64_t>(1, space.batch_max));
  {
    Progress progress(control, done, total_estimate, best);
    run_parallel(control, groups.size(), [&](std::size_t gi) {
      if (stopped(control)) {
        interrupted = true;
        return;
      }
      Local& L = locals.local();
      if (!L.coll) L.coll.emplace(better, x, y, static_cast<std::size_t>(space.top));
      const Group& g = groups[gi];
      InferPlan p;
      p.tp = g.tp;
      p.ep = g.ep;
      p.chips = g.tp * g.ep;
      p.weight_dtype = g.w;
      p.kv_dtype = g.kv;
      auto reject = [&](Reject r) {
        ++L.stats.rejected[static_cast<int>(r)];
        ++L.stats.evaluated;
        done.fetch_add(1, std::memory_order_relaxed);
      };
      // The layout and the dtypes are checked once per group: a group the model or the chip
      // cannot run counts as one rejected plan.
      switch (model::check(m, infer_config(space.base, p).forward)) {
        case model::LayoutFault::none: break;
        case model::LayoutFault::ep_dense:
        case model::LayoutFault::experts_dense:
        case model::LayoutFault::ep_experts:
        case model::LayoutFault::ep_imbalance:
        case model::LayoutFault::ep_range: reject(Reject::ep_model); return;
        default: reject(Reject::tp_model); return;
      }
      // The group's curve: every batch's latencies from lines fitted once (ServingCurve).
      p.batch = g.ep;
      const InferenceConfig cfg = infer_config(space.base, p);
      prepare_serving_curve(m, sys, cfg, *L.curve);
      ++L.stats.shapes;
      bool ok = true;
      for (int i = 0; i < L.curve->prefill_graph.op_count && ok; ++i) {
        ok = ops::supported(L.curve->prefill_graph.ops[i].cost.expand(), sys.chip);
      }
      if (!ok) {
        reject(Reject::dtype);
        return;
      }
      if (space.batch_model) {
        if (!L.model) L.model = space.batch_model();
        if (const Reject why = L.model->prepare(m, sys, cfg); why != Reject::count) {
          reject(why);
          return;
        }
      }
      // Every batch that splits over the EP groups, up to --batch-max or the largest that fits.
      const std::int64_t fit = space.batch_model ? L.model->max_batch() : L.curve->max_batch;
      const std::int64_t top_batch = space.batch_max > 0 ? space.batch_max : std::max<std::int64_t>(fit, g.ep);
      std::uint64_t count = 0, inner = 0;
      double local_best = std::numeric_limits<double>::infinity();
      for (std::int64_t b = g.ep; b <= top_batch; b += g.ep) {
        p.batch = b;
        p.order = (static_cast<std::uint64_t>(gi) << 24) | inner++;
        ++count;
        ++L.stats.timed;
        const ServingPoint r = space.batch_model ? L.model->at(static_cast<double>(b)) : serving_at(*L.curve, static_cast<double>(b));
        Reject why = Reject::count;
        if (!r.fits) why = Reject::memory;
        // The curve agrees with infer_core to rounding: a plan at a limit is kept here (1e-9
        // of slack) and judged on its exact figures below.
        else if (space.ttft_max_s && r.ttft_s > *space.ttft_max_s * (1 + 1e-9)) why = Reject::ttft;
        else if (space.tpot_max_s && r.tpot_s > *space.tpot_max_s * (1 + 1e-9)) why = Reject::tpot;
        if (why != Reject::count) {
          ++L.stats.rejected[static_cast<int>(why)];
          continue;
        }
        ++L.stats.feasible;
        p.ttft_s = r.ttft_s;
        p.tpot_s = r.tpot_s;
        p.e2e_s = r.e2e_s;
        p.output_tokens_per_s = r.output_tokens_per_s;
        p.tokens_per_s_per_chip = r.output_tokens_per_s / L.curve->chips;
        p.memory_bytes = r.memory_bytes;
        local_best = std::min(local_best, infer_key(objective, p));
        L.coll->add(p);
        if ((count & 1023) == 0 && stopped(control)) {
          interrupted = true;
          break;
        }
      }
      end_task(L.stats, count, done, best, local_best);
    });
  }
  InferSearchResult out =
      collect<InferSearchResult>(locals, Coll(better, x, y, static_cast<std::size_t>(space.top)), interrupted, t0);
  // The plans returned carry infer_core's numbers (the curve's agree to rounding; a plan the
  // rounding put on the wrong side of a limit is dropped), ranked again on them.
  detail::PerThread<std::unique_ptr<InferenceResult>> scratch;
  auto exact = [&](std::vector<InferPlan>& plans) {
    std::vector<char> keep(plans.size(), 1);
    run_parallel(control, plans.size(), [&](std::size_t i) {
      auto& r = scratch.local();
      if (!r) r = std::make_unique<InferenceResult>();
      InferPlan& p = plans[i];
      infer_core(m, sys, infer_config(space.base, p), *r);
      p.ttft_s = r->ttft_s;
      p.tpot_s = r->tpot_s;
      p.e2e_s = r->e2e_s;
      p.output_tokens_per_s = r->output_tokens_per_s;
      p.tokens_per_s_per_chip = r->output_tokens_per_s / r->chips;
      p.memory_bytes = r->memory.total_bytes;
      keep[i] = r->memory.fits && !(space.ttft_max_s && p.ttft_s > *space.ttft_max_s) &&
                !(space.tpot_max_s && p.tpot_s > *space.tpot_max_s);
    });
    std::size_t n = 0;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      if (keep[i]) plans[n++] = plans[i];
    }
    plans.resize(n);
  };
  if (!space.batch_model) {
    exact(out.best);
    exact(out.pareto);
  }
  out.stats.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::stable_sort(out.best.begin(), out.best.end(), better);
  std::stable_sort(out.pareto.begin(), out.pareto.end(), [&](const InferPlan& a, const InferPlan& b) {
    return y(a) != y(b) ? y(a) < y(b) : a.order < b.order;
  });
  return out;
}

}  // namespace ridgeline::analysis
