#pragma once
// Shared pieces of the CLI: hardware flags, output, error handling.
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "ridgeline/analysis/advice.hpp"
#include "ridgeline/hw/overrides.hpp"
#include "ridgeline/model/speculation.hpp"
#include "ridgeline/model/transformer.hpp"
#include "ridgeline/report/compare.hpp"
#include "ridgeline/report/training.hpp"
#include "ridgeline/serving/seeds.hpp"
#include "ridgeline/serving/simulator.hpp"
#include "ridgeline/serving/workload.hpp"

namespace ridgeline::cli {

/// --hw, --peak, --mem-bw, --link-bw, --chips as given on the command line.
struct HardwareFlags {
  std::string hw = "h100-sxm";
  std::vector<std::string> peaks;
  std::string mem_bw, link_bw, chips, slice;
  std::string listed;  ///< per_chip: the --hw list this run is one chip of ("": not side by side)
};

void add_hardware_flags(CLI::App* app, HardwareFlags& f);
/// Leaves `flags` (of add_hardware_flags) out of the command's --help: a command that refuses
/// them (train takes --gpus, a search its own ranges, a profile one chip) says so when given.
void hide_flags(CLI::App* app, std::initializer_list<const char*> flags);
/// profile, advise profile, calibrate: a profile ran on one chip; InputError for --chips or --slice.
void refuse_chips_for_profiles(const HardwareFlags& f);

/// --hw a,b,c on a command of one chip: `body` runs once per chip (hw.hw set to each, `json`
/// set so that it builds its document), and the documents are printed as a JSON array, or
/// side by side as a table of `rows` with a column per chip. With one chip `body` runs as is.
void per_chip(HardwareFlags& hw, bool& json, std::span<const report::Headline> rows, const std::function<void()>& body);
/// The chips of --hw a,b,c, each once, in order; InputError for an empty item or more than
/// 16 (`where`: "side by side", "in one search").
std::vector<std::string> chip_names(const std::string& hw, std::string_view where);

/// --tokens, --days and --price of a whole training run (train, search train).
struct RunFlags {
  std::string tokens, days;
  std::vector<std::string> prices;
};
void add_run_flags(CLI::App* app, RunFlags& f);
/// The run the flags ask for on `chip` (a goal of zeros without --tokens or --days), priced
/// by --price (USD/h for every chip, or CHIP=USD/h for one of `hw`'s) or the chip file's
/// price_per_hour; InputError naming the flag.
report::RunReport run_goal(const RunFlags& f, const hw::ChipSpec& chip, const HardwareFlags& hw);

/// How a training plan's communication overlaps (train, search train):
/// --overlap-efficiency, --framework, --prefetch, --grad-reduce-dtype (docs/training.md#interference).
struct OverlapFlags {
  std::string efficiency = "1", preset = "megatron", prefetch = "1", grad_dtype = "fp32";  // preset: --framework
};
void add_overlap_flags(CLI::App* app, OverlapFlags& f);
/// Writes them into `c`; InputError naming the flag.
void apply_overlap_flags(const OverlapFlags& f, analysis::TrainConfig& c);

/// --model, --tp, --ep, the dtypes, --attention, --algo, --sequence-parallel as given (infer, serve).
struct ForwardFlags {
  std::string model = "llama-3.1-8b", tp, ep = "1";
  std::string weight_dtype, kv_dtype, act_dtype = "bf16", compute_dtype, attention = "flash", algo;  // algo "": auto
  std::string kernels;  // "": unfused
  std::string block_fp8_gemms;  // "": vLLM's Triton kernel (serve: the engine's)
  std::string moe_a2a;          // "": an all-to-all of the pairs (serve, advise infer --engine: the engine's)
  std::string expert_imbalance = "auto";  // auto: the routing model (model/routing.hpp)
  std::string experts = "tp";    // how each tp group splits the experts: tp or ep
  bool sequence_parallel = false;
};
void add_forward_flags(CLI::App* app, ForwardFlags& f);
/// The forward pass of `m` as the flags ask (tp from --chips / --ep when --tp is not given);
/// InputError naming the flag.
model::ForwardConfig forward_config(const ForwardFlags& f, const HardwareFlags& hw, const model::ModelConfig& m);
/// --moe-a2a's value: pairs (also "", the default), gather or deepep; InputError naming the flag.
model::ForwardConfig::MoeA2A parse_moe_a2a(const std::string& v);
/// Speculative decoding as given: --draft MODEL|mtp, --spec-tokens K, --accept RATE[,RATE...] (infer, serve, search serve).
struct SpecFlags {
  std::string draft, tokens, accept;
};
void add_spec_flags(CLI::App* app, SpecFlags& f);
/// The speculation the flags ask for (off without --draft), its draft model held in `draft`
/// (which must outlive it); InputError naming the flag.
model::Speculation speculation(const SpecFlags& f, const model::ModelConfig& target, model::ModelConfig& draft);
/// The load and lengths of a serving workload as given (serve, search serve).
struct WorkloadFlags {
  std::string qps, arrival = "poisson", concurrency, trace, users, think_time;
  std::string prompt = "1024", gen = "256", requests, warmup = "0", seed = "1";  // requests "": chosen by the run, or a whole trace
  std::string prefix_groups, prefix_tokens;
  std::string seeds, seed_quantile;  // "": one seed
  std::string sampling = "greedy";
  std::string warmup_drain = "off";  // on: the warm-up a phase of its own (WorkloadSpec::warmup_drained)
  const CLI::App* app = nullptr;  ///< the command they were given to (which flags were given)
};
void add_workload_flags(CLI::App* app, WorkloadFlags& f);
/// The rates of a comma-separated --qps (a sweep when there are several, at most 64).
std::vector<double> qps_rates(const std::string& v);
/// The workload the flags give (open loop: at the first --qps rate); InputError naming the flag.
serving::WorkloadSpec workload_spec(const WorkloadFlags& f);
/// --sampling: greedy or random (docs/serving.md#sampling); InputError naming the flag.
model::ForwardConfig::Sampling sampling_mode(const WorkloadFlags& f);
/// The measurement window: chosen by the run (docs/serving.md#measurement-window) unless
/// --requests or --warmup-requests fixes the count, or a trace gives the requests.
serving::MeasurementWindow measurement_window(const WorkloadFlags& f);
/// --seeds N (1 to 64) and --seed-quantile Q (in (0, 1], with N >= 2); InputError naming the flag.
serving::SeedsConfig seeds_config(const WorkloadFlags& f);

/// Loads the chip and applies the overrides; throws InputError naming the flag.
hw::System load_system(const HardwareFlags& f);

/// load_system for commands that take their chip count from their own flags (--tp, --gpus).
hw::System load_chip_system(const HardwareFlags& f);

/// Runs the command line `argv` (argv[0] is the program name): output to `out`, errors to
/// `err` as one line; returns the exit status (0, 2 for bad input, 1 for an internal error,
/// 130 for an interrupted search).
int run(int argc, char** argv, std::ostream& out, std::ostream& err);

/// A command's options as its --help lists them (hidden ones left out): the Python module
/// builds its functions' signatures, docstrings and keyword checks from these.
struct FlagInfo {
  std::string name;           ///< "--batch", or a positional's name ("file")
  std::string kind;           ///< "INT", "DTYPE", ... ("" for a flag without a value)
  std::string default_value;  ///< as --help shows it ("" for none)
  std::string description;
  bool positional = false, required = false, repeatable = false;
};
std::vector<FlagInfo> command_flags(const std::vector<std::string>& path);
/// Where commands print (std::cout unless run() was given another stream).
std::ostream*& out_stream();
/// The status a command asks run() to return after it printed its output (default 0).
int& exit_status();
/// Where a search or a long simulation reports its progress (fraction done, 0 to 1) when
/// set, in place of the progress bar on a terminal's stderr (the web page's worker sets it).
std::function<void(double)>& progress_hook();

/// --threads: 0 when not given, else 1 to 4096 (InputError naming the flag otherwise).
/// --tensor-dtype: a dtype the chip's matrix unit runs (a profile's tensor FLOPs are placed
/// under that roof; "": bf16, else fp16, fp32 or fp64, the first the chip has); InputError naming the flag, the
/// chip and the dtypes it has.
DType tensor_dtype(const std::string& value, const hw::ChipSpec& chip);
/// The chip a profile is analysed on: --hw when given (`warning` says so when the trace ran
/// on another), else the trace's own device when the catalog has it, else --hw's default
/// (`warning` says the trace's device is not in the catalog).
hw::System profile_system(const HardwareFlags& f, bool hw_given, const profile::Profile& p, std::string& warning);
/// The items of a separated list, empty ones kept ("a,,b" is "a", "", "b"): each caller
/// says what an empty item means.
std::vector<std::string> split_list(const std::string& s, char sep = ',');
int parse_threads(const std::string& value);

/// Prints `j` (with --json) or `text` to the output stream.
void emit(bool json, nlohmann::json j, const std::string& text);

/// Prints advice (largest gain first) as a table or JSON.
void emit_advice(bool json, const std::vector<analysis::Advice>& advice);

/// An ERT roofline.json made a chip file (`hw import-ert`, `profile --format ert`).
struct ErtImport {
  std::string input, out, name;
  std::vector<std::string> capacities;
  bool json = false;
};
/// --capacity, --name, --out and --json for an ERT import.
void add_ert_flags(CLI::App* app, ErtImport& f);
/// Reads the ERT file, prints the chip (and writes it with --out).
void import_ert(const ErtImport& f);

/// Registers a command: `run` is called after parsing.
struct Command {
  CLI::App* app;
  std::function<void()> run;
};

void register_hw(CLI::App& root, std::vector<Command>& commands);
void register_op(CLI::App& root, std::vector<Command>& commands);
void register_infer(CLI::App& root, std::vector<Command>& commands);
void register_serve(CLI::App& root, std::vector<Command>& commands);
void register_block(CLI::App& root, std::vector<Command>& commands);
void register_train(CLI::App& root, std::vector<Command>& commands);
void register_fuse(CLI::App& root, std::vector<Command>& commands);
void register_profile(CLI::App& root, std::vector<Command>& commands);
void register_plot(CLI::App& root, std::vector<Command>& commands);
void register_measure(CLI::App& root, std::vector<Command>& commands);
void register_validate(CLI::App& root, std::vector<Command>& commands);
void register_search(CLI::App& root, std::vector<Command>& commands);
void register_calibrate(CLI::App& root, std::vector<Command>& commands);
void register_report_infer(CLI::App& root, std::vector<Command>& commands);
void register_report_train(CLI::App& root, std::vector<Command>& commands);
void register_report_serve(CLI::App& root, std::vector<Command>& commands);
void register_report_fleet(CLI::App& root, std::vector<Command>& commands);
void register_advise_infer(CLI::App* advise, std::vector<Command>& commands);
void register_advise_train(CLI::App* advise, std::vector<Command>& commands);
void register_advise_profile(CLI::App* advise, std::vector<Command>& commands);
/// "matmul, dot, ..." for error messages.
std::string op_kind_names();

}  // namespace ridgeline::cli
