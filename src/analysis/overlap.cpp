// Communication hidden behind compute and what hiding it costs (docs/training.md#interference).
#include "ridgeline/analysis/overlap.hpp"

#include <algorithm>

namespace ridgeline::analysis {

double interference_rate(const OverlapComm& c, const ComputeWindow& w, const hw::ChipSpec& chip) noexcept {
  if (!(c.time_s > 0) || !(w.time_s > 0)) return 0;
  // Shares of the window's time: its memory-bound and compute-bound kernels (communication on
  // the critical path is neither: the multiprocessors and memory wait then anyway).
  const double mem_share = std::clamp(w.memory_bound_s / w.time_s, 0.0, 1.0);
  const double cb_share = std::clamp(w.compute_bound_s / w.time_s, 0.0, 1.0 - mem_share);
  const double bw = chip.main_bandwidth_Bps() * (chip.efficiency.memory > 0 ? chip.efficiency.memory : 1);
  // The collective's and the compute-bound kernels' main-memory demands, as fractions of the
  // achievable bandwidth.
  const double comm_demand = bw > 0 ? c.hbm_bytes / c.time_s / bw : 0;
  const double cb_demand = bw > 0 && w.compute_bound_s > 0 ? w.compute_bound_bytes / w.compute_bound_s / bw : 0;
  const double sm_loss = chip.sms > 0 ? std::min(1.0, c.sms / chip.sms) : 0;
  const double excess = std::max(0.0, cb_demand + comm_demand - std::max(1.0, cb_demand));
  return cb_share * std::max(sm_loss, std::min(1.0, excess)) + mem_share * std::min(1.0, comm_demand);
}

OverlapCost overlap(const OverlapComm& c, double hideable_s, const ComputeWindow& w, double efficiency,
                    const hw::ChipSpec& chip) noexcept {
  OverlapCost out;
  if (!(c.time_s > 0)) return out;
  const double busy = c.network ? w.net_busy_s : w.up_busy_s;
  const double room = std::max(0.0, w.time_s - busy);
  const double hideable = std::clamp(hideable_s, 0.0, c.time_s);
  out.hidden_s = std::clamp(efficiency, 0.0, 1.0) * std::min(hideable, room);
  out.exposed_s = c.time_s - out.hidden_s;
  out.interference_s = out.hidden_s * interference_rate(c, w, chip);
  return out;
}

}  // namespace ridgeline::analysis
