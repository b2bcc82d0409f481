#pragma once
/// Measuring the machine ridgeline runs on: its CPU, compute ceilings per dtype and
/// bandwidth per memory level, into a chip file (docs/measurement.md).
#include <functional>
#include <memory>
#include <limits>
#include <string>
#include <vector>

#include "ridgeline/core/dtype.hpp"
#include "ridgeline/hw/chip.hpp"

namespace ridgeline::measure {

struct CacheLevel {
  int level = 0;
  double size_bytes = 0;
  int shared_cpus = 1;  ///< logical CPUs sharing one instance
  /// For logical CPU i, the instance of this cache it uses (from hwloc or sysfs); empty
  /// when unknown.
  std::vector<int> instance_of_cpu;
};

/// The instances of `c` that threads pinned to CPUs 0 .. threads-1 use between them (as
/// `measure` pins them): the distinct instances of those CPUs, or, when the map is not
/// known, threads / shared_cpus rounded up. The capacity those threads have at that level
/// is this many times the cache's size.
int instances_used(const CacheLevel& c, int threads);

struct HostInfo {
  std::string model;
  int cpus = 1;          ///< logical CPUs online
  double mhz = 0;        ///< as /proc/cpuinfo reports it (0 when unknown)
  bool avx2 = false, fma = false, avx512f = false, avx512_bf16 = false, avx512_vnni = false, amx = false;
  std::vector<CacheLevel> caches;  ///< data and unified caches, innermost first
  int cores = 0, packages = 0, numa_nodes = 0;  ///< physical cores, sockets, NUMA nodes (0: unknown)
  std::string topology;  ///< where the caches came from: "hwloc" or "sysfs"
};

/// Reads /proc/cpuinfo (model, ISA, clock) and the cache topology from hwloc (sysfs when
/// hwloc is not built in or finds no caches).
HostInfo detect_host();

/// One measured figure: median of the repetitions and the spread (max/min - 1).
struct Sample {
  double value = 0;
  double spread = 0;
  int repetitions = 0;
};

/// Pins the calling thread to one logical CPU (best effort; Linux).
void pin(int cpu) noexcept;
/// Median and spread (max/min - 1) of repeated measurements.
Sample summarize(std::vector<double> v);

struct PeakResult {
  DType dtype = DType::fp32;
  std::string isa;  ///< the instruction set the kernel used
  Sample one_core;        ///< FLOP/s (OP/s for int8)
  Sample all_cores;
};

struct BandwidthPoint {
  double working_set_bytes = 0;
  Sample read, write, copy, triad;  ///< bytes/s counted as the kernel's loads + stores (no write-allocate)
  /// Write and copy with non-temporal stores (bypassing the caches, so no write-allocate
  /// read): measured only where they apply, working sets past half the last cache
  /// (repetitions 0 elsewhere).
  Sample write_nt, copy_nt;
  int cache = -1;  ///< all-core points: the cache (index into HostInfo::caches) this size sits in; -1 past them
};

/// The stream kernels of the bandwidth sweep (write_nt, copy_nt: non-temporal stores).
enum class Stream { read, write, copy, triad, write_nt, copy_nt };

/// FLOP/s of the FMA (or dot-product) kernel `measure` uses for `dtype`, on `threads`
/// pinned threads for about `seconds`; 0 when the CPU has no such kernel. The same code as
/// `measure_host`'s peaks (bench/ times it through this): CpuDevice(h).peak_rate.
double peak_rate(const HostInfo& h, DType dtype, int threads, double seconds);

/// Bytes/s (the kernel's loads + stores) of one stream kernel over `bytes` of arrays per
/// thread on `threads` pinned threads: median and spread of `reps` timings of ~5 ms each.
/// The same code as `measure_host`'s sweep: CpuDevice(h).stream_rate, with fresh arrays.
Sample stream_rate(const HostInfo& h, Stream kernel, double bytes, int threads, int reps);

/// A peak kernel a device can time: the dtype and the instructions it uses.
struct PeakKernel {
  DType dtype = DType::fp32;
  std::string isa;
};

/// What `measure_device` needs from the thing it measures: a description (model, workers,
/// caches), its peak kernels, and two timed primitives. The sweep, the plateaus and the
/// witness are built on these alone, so a back-end for another device (a GPU through
/// CUDA: SMs for workers, its L2 and HBM for levels, its tensor-core kernels for peaks)
/// is one more implementation of this interface, with no change to the sweep.
class Device {
 public:
  virtual ~Device() = default;
  /// The device: model, workers (`cpus`), ISA flags, caches innermost first.
  virtual const HostInfo& info() const = 0;
  /// The dtypes whose peak this device times, widest instructions first found.
  virtual std::vector<PeakKernel> peak_kernels() const = 0;
  /// FLOP/s of `dtype`'s peak kernel on `workers` workers for about `seconds`; 0 if none.
  virtual double peak_rate(DType dtype, int workers, double seconds) = 0;
  /// Bytes/s (the kernel's loads + stores) of `kernel` over `bytes` per worker on
  /// `workers` workers: median and spread of `reps` timings.
  virtual Sample stream_rate(Stream kernel, double bytes, int workers, int reps) = 0;
  /// Whether a plain store reads its line first past the innermost cache (the rule for
  /// this kind of device; MeasureResult::write_allocate).
  virtual bool stores_allocate() const = 0;
};

/// This CPU: the FMA/dot-product kernels and the stream kernels above, threads pinned one
/// per CPU. Keeps each thread's arrays from one stream_rate call to the next (a sweep would
/// otherwise fault in hundreds of MB per point), grown as the sizes grow.
class CpuDevice final : public Device {
 public:
  explicit CpuDevice(HostInfo h);
  ~CpuDevice() override;
  CpuDevice(const CpuDevice&) = delete;
  CpuDevice& operator=(const CpuDevice&) = delete;
  const HostInfo& info() const override { return host_; }
  std::vector<PeakKernel> peak_kernels() const override;
  double peak_rate(DType dtype, int workers, double seconds) override;
  Sample stream_rate(Stream kernel, double bytes, int workers, int reps) override;
  /// x86 write-back memory allocates a line on a store miss (Intel SDM vol. 3A, AMD APM
  /// vol. 2): true on x86-64.
  bool stores_allocate() const override;

 private:
  struct Arrays;
  HostInfo host_;
  std::unique_ptr<Arrays> arrays_;
};

/// A level's plateau found in the one-core read sweep.
struct Plateau {
  int cache = -1;             ///< index into HostInfo::caches; -1 for main memory
  double from_bytes = 0;      ///< the working sets taken as the plateau: [from, to]
  double to_bytes = 0;
  int points = 0;
  Sample read;                ///< median read bandwidth over the points; spread = max/min - 1 across them
  /// Where the read bandwidth falls from this plateau to the next one (the working set at
  /// which it crosses their geometric mean, interpolated in log-log between the two sweep
  /// points around it); 0 when the sweep shows no such fall (last level, or no drop).
  double edge_bytes = 0;
  /// Main memory: the read rates over the last two doublings of the working set (from a
  /// quarter of the largest set to it) agree within kUnstableSpread; false: the rate still
  /// falls there (a cache larger than the topology says), and the figure is not settled.
  bool settled = true;
  double last_doublings_spread = 0;  ///< max/min - 1 of those rates
};

/// Main memory is measured past this working set in all (one core, and all cores together)
/// whatever caches the topology reports: a VM's hwloc may report less last-level cache than
/// the host has (docs/measurement.md#main-memory).
inline constexpr double kMainMemoryBytes = 1024.0 * 1024 * 1024;
/// A level's figure whose repeated timings spread by more than this (max/min - 1), or main
/// memory's whose rate moves by more over its last two doublings, is flagged unstable.
inline constexpr double kUnstableSpread = 0.10;

/// The plateau of each memory level in a one-core sweep (sorted by working set). A level's
/// points are those well inside it — from 1.5× the previous level's capacity to 0.75× its
/// own (main memory: from 2× the last cache, less the leading sets whose read rate is still
/// above the largest set's by more than kUnstableSpread: a cache larger than reported) —
/// or, when none are, every point inside it; a level with no point at all gets no plateau.
/// The caches' sizes say where to look; the edges say where the bandwidth actually falls, to
/// set beside them.
std::vector<Plateau> find_plateaus(const std::vector<BandwidthPoint>& sweep, const std::vector<CacheLevel>& caches);

struct MeasureConfig {
  bool quick = true;        ///< ~20 s; the full mode repeats more and sweeps finer
  int threads = 0;          ///< 0: every online CPU
  /// Cap on the sweeps (0: one core to 4x the last cache; all cores 2x per core in quick mode,
  /// 4x in full; at least 64 MiB and, past the caches, kMainMemoryBytes in all).
  double max_working_set_bytes = 0;
  /// Called after each measurement step with the steps done, their total and what the
  /// step measured (the CLI draws a progress bar from it on a terminal).
  std::function<void(int done, int total, const std::string& what)> progress;
};

struct MeasureResult {
  HostInfo host;
  std::vector<PeakResult> peaks;
  std::vector<BandwidthPoint> sweep;        ///< one core, small to past the last cache
  std::vector<BandwidthPoint> sweep_all;    ///< all cores, a few sizes per level
  std::vector<Plateau> plateaus;            ///< find_plateaus(sweep, host.caches)
  /// Whether plain stores allocate (read the line first) past L1: true on
  /// x86, whose write-back memory allocates on a store miss (Intel SDM vol. 3A, AMD APM
  /// vol. 2). Not measured: without hardware counters no timing separates it cleanly
  /// (docs/measurement.md), so `witness` is reported beside it, not used to decide it.
  bool write_allocate = true;
  /// What the all-core main-memory copy pair suggests: 2 × (copy_nt / copy − 1), the extra
  /// read one plain store seems to cost, in lines — about 1 if stores allocate and main
  /// memory moves mixed traffic at one rate, about 0 if they do not; NaN when not measured.
  double write_allocate_witness = std::numeric_limits<double>::quiet_NaN();
  int threads = 0;  ///< threads of the all-core measurements (pinned to CPUs 0 .. threads-1); 0: host.cpus
  double seconds = 0;
  std::string command;

  /// The all-core measurements' threads: `threads`, or every CPU when unset.
  int all_threads() const noexcept { return threads > 0 ? threads : host.cpus; }
};

/// Measures `device`: its peaks on one worker and on all (`cfg.threads`, else every one),
/// a one-worker bandwidth sweep from 16 KiB to past the last cache, an all-worker point in
/// each cache level and past the last, the plateaus and the write-allocate witness.
MeasureResult measure_device(Device& device, const MeasureConfig& cfg);

/// measure_device on this CPU (CpuDevice(detect_host())). Pins threads to CPUs where it can.
MeasureResult measure_host(const MeasureConfig& cfg);

/// The measured chip: peaks (all cores), vector = matrix units for a CPU, one memory level
/// per cache and DRAM, each the best all-core rate of the stream kernels there, counted as
/// traffic: with `write_allocate`, a plain store's read for ownership is counted at every
/// level but L1 (copy moves 3 bytes per 2 it copies, triad 4 per 3). A cache level's
/// capacity is what the measuring threads had: its size times instances_used(threads).
hw::ChipSpec to_chip(const MeasureResult& r);

/// A memory level's roof as to_chip takes it: the best all-core stream kernel there (counted
/// as traffic), that kernel's spread over its repeated timings (max/min - 1), and whether the
/// figure is unstable: a spread above kUnstableSpread, or (main memory) a one-core rate that
/// had not settled over the sweep's last two doublings. Outermost first, as in the chip.
struct LevelRoof {
  std::string name;  ///< "DRAM" (or "memory" when capped inside a cache), "L3", ...
  double bandwidth_Bps = 0;
  std::string kernel;  ///< read, copy, triad, write_nt or copy_nt
  double spread = 0;
  double working_set_bytes = 0;  ///< per thread
  bool unstable = false;
  std::string why;  ///< when unstable: what moved
};
std::vector<LevelRoof> level_roofs(const MeasureResult& r);

/// The chip file text (the catalog's schema, with a `measured:` block).
std::string chip_yaml(const hw::ChipSpec& c, const MeasureResult& r);

}  // namespace ridgeline::measure
