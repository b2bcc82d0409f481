// The command line as a function: parse, run one command, report errors (main.cpp and
// the Python module both call it).
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <new>
#include <iterator>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "ridgeline/analysis/single_op.hpp"
#include "ridgeline/core/error.hpp"
#include "ridgeline/core/text.hpp"

namespace {

constexpr const char* kOverview = R"(ridgeline — where does the time go, and what bounds it?

Predicts the time of an operation from first principles (FLOPs over compute rate,
bytes over memory bandwidth, bytes over link bandwidth), names the bound, and gives
lower (perfect overlap), upper (no overlap) and realistic times.

Commands
  hw list | hw show NAME       the hardware catalog: peaks, memory, links, ridge points
  hw import-ert FILE ...       a chip file from the Empirical Roofline Toolkit's roofline.json
  op KIND ...                  one operation: FLOPs, bytes, intensity, times, bound
  threshold KIND ... --solve V the value of V at which the op becomes compute-bound
  models                       the bundled models (Hugging Face configs) and their parameters
  infer --model M ...          serving a model: TTFT, TPOT, throughput, memory, per-op bounds
  serve --model M --qps R ...  serving under load: continuous batching, TTFT/TPOT percentiles, goodput
  block ...                    one transformer block in units of one (s,h)x(h,h) GEMM
  train --model M --gpus N ... one training step: step time, MFU, communication, memory
  recompute ...                what to keep, recompute or offload per activation, under a budget
  fuse --model M ...           what fusion, GEMM epilogues and CUDA graphs save
  profile FILE --hw H          captured kernels (Nsight Compute CSV, PyTorch traces, CSV) on the roofline
  advise profile|infer|train   ranked advice with the estimated gain of each fix
  plot roofline|sweep|breakdown|memory  SVG (or PNG) charts
  measure [--out host.yaml]    this machine's roofline, as a chip file usable as --hw
  validate [--hw host.yaml]    real kernels timed here beside ridgeline's predictions
  calibrate FILE --hw H        efficiencies per kernel class fitted from a profile or validate run
  search train|infer ...       every plan: the fastest that fits and the Pareto front
  search serve --model M --hw A,B --qps R --slo ...
                               the cheapest serving fleet meeting the SLOs, the best per chip first;
                               --emit vllm|sglang|trtllm writes the engine's launch files
  report --out F.html ...      one self-contained HTML page of an infer analysis
                               (--train a training step, --serve a serving run, --fleet a search serve)

Worked example (seed 000): a (256, 4096) x (4096, 4096) bf16 GEMM on an H200
  $ ridgeline op matmul --m 256 --k 4096 --n 4096 --hw h200
    intensity 227.6 FLOPs/byte vs ridge 206.1 -> compute-bound
  $ ridgeline threshold matmul --k 4096 --n 4096 --hw h200 --solve m
    compute-bound for m >= 230 tokens

Every command takes --json. `ridgeline help COMMAND` (or `COMMAND --help`) lists the flags;
`ridgeline --version` prints the version.
)";

}  // namespace

namespace ridgeline::cli {

namespace {

// Edit distance, for "did you mean".
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The deepest subcommand the parse reached.
const CLI::App* deepest(const CLI::App& app) {
  for (const CLI::App* s : app.get_subcommands()) return deepest(*s);
  return &app;
}

std::string command_path(const CLI::App* a) {
  std::string p;
  for (; a != nullptr && a->get_parent() != nullptr; a = a->get_parent()) p = a->get_name() + (p.empty() ? "" : " " + p);
  return p.empty() ? "ridgeline" : p;
}

// CLI11's messages in ridgeline's form: which flag, what was wrong, what to do.
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& e) {
  const CLI::App* at = deepest(app);
  const std::string cmd = command_path(at);
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    // "The following arguments were not expected: 8 --gpus": name the flag and the nearest one.
    const std::vector<std::string> rest = at->remaining();
    std::string flag;
    for (const std::string& x : rest) {
      if (x.rfind("--", 0) == 0 && flag.empty()) flag = x.substr(0, x.find('='));
    }
    if (flag.empty()) {
      // A flag given without its value takes the next flag as one ("--m --k 4": --m took "--k", 4 is left over).
      for (const CLI::Option* o : at->get_options()) {
        for (const std::string& v : o->results()) {
          if (o->count() > 0 && o->get_expected_min() > 0 && v.rfind("--", 0) == 0) {
            return fmt::format("{}: took '{}' as its value: give {} a value (e.g. {} 8)", o->get_name(), v, o->get_name(), o->get_name());
          }
        }
      }
      return fmt::format("{}: '{}' was not expected here (a value without its flag?)", cmd, rest.empty() ? what : rest.front());
    }
    std::string best;
    std::size_t best_d = 4;  // suggest only what is close
    // The same thing under another name in this command (inference counts chips, training GPUs).
    static constexpr std::pair<std::string_view, std::string_view> kSynonyms[] = {
        {"gpus", "chips"}, {"chips", "gpus"}, {"dtype", "weight-dtype"}, {"seq", "prompt"}, {"batch", "concurrency"}};
    for (const auto& [from, to] : kSynonyms) {
      if (flag.substr(2) == from && at->get_option_no_throw("--" + std::string(to)) != nullptr) best = "--" + std::string(to), best_d = 0;
    }
    for (const CLI::Option* o : at->get_options()) {
      for (const std::string& n : o->get_lnames()) {
        const std::size_t d = distance(flag.substr(2), n);
        if (d < best_d) best_d = d, best = "--" + n;  // a synonym (0) stays
      }
    }
    return fmt::format("{}: not a flag of `{}`{}", flag, cmd,
                       best.empty() ? fmt::format(" (`ridgeline {} --help` lists them)", cmd) : fmt::format(": did you mean {}?", best));
  }
  const std::string name = what.substr(0, what.find(':'));
  if (what.find("At Most 1 required but received") != std::string::npos) return fmt::format("{}: given more than once: give it once", name);
  if (what == "A subcommand is required") {
    std::string names;
    for (const CLI::App* s : at->get_subcommands([](const CLI::App* x) { return !x->get_group().empty(); })) {
      names += (names.empty() ? "" : ", ") + s->get_name();
    }
    return fmt::format("{}: a subcommand is required: expected one of {}", cmd, names);
  }
  // "--batch: 1 required INT missing": the flag's value kind (name_value_kinds) in between.
  if (const std::size_t r = what.find(" required "); r != std::string::npos && what.ends_with(" missing")) {
    const std::string kind = what.substr(r + 10, what.size() - 8 - (r + 10));
    return fmt::format("{}: a value is required after the flag ({})", name, kind);
  }
  return what;
}

}  // namespace

std::ostream*& out_stream() {
  static std::ostream* s = &std::cout;
  return s;
}

int& exit_status() {
  static int status = 0;
  return status;
}

std::function<void(double)>& progress_hook() {
  static std::function<void(double)> hook;
  return hook;
}

namespace {

// What each option takes, for --help (CLI11 says TEXT for every string option): by flag
// name, the same kind wherever the flag appears; a command's own reading first.
struct ValueKind {
  std::string_view command;  // "" for every command
  std::string_view flag;
  std::string_view kind;
};
constexpr ValueKind kValueKinds[] = {
    {"", "--hw", "CHIP|FILE.yaml"}, {"infer", "--hw", "CHIP[,CHIP...]"}, {"train", "--hw", "CHIP[,CHIP...]"},
    {"serve", "--hw", "CHIP[,CHIP...]"}, {"search train", "--hw", "CHIP[,CHIP...]"}, {"search infer", "--hw", "CHIP[,CHIP...]"},
    {"search serve", "--hw", "CHIP[,CHIP...]"}, {"plot roofline", "--hw", "CHIP[,CHIP...]"}, {"", "--model", "MODEL|config.json"}, {"", "--chips", "INT"}, {"", "--slice", "AxB[xC]"},
    {"", "--peak", "DTYPE=RATE"}, {"", "--mem-bw", "BANDWIDTH"}, {"", "--link-bw", "BANDWIDTH"}, {"", "--node-link-bw", "BANDWIDTH"},
    {"", "--tp", "INT"}, {"", "--pp", "INT"}, {"", "--dp", "INT"}, {"", "--cp", "INT"}, {"", "--ep", "INT"}, {"", "--experts", "tp|ep"}, {"search serve", "--experts", "tp|ep[,...]"}, {"", "--vpp", "INT"},
    {"", "--zero", "0-3"}, {"", "--gpus", "INT"}, {"", "--gpus-per-node", "INT"}, {"", "--micro-batch", "INT"},
    {"", "--global-batch", "INT"}, {"", "--batch", "INT"}, {"", "--seq", "INT"}, {"", "--prompt", "INT"}, {"", "--gen", "INT"},
    {"serve", "--prompt", "LENGTHS"}, {"serve", "--gen", "LENGTHS"}, {"search serve", "--prompt", "LENGTHS"},
    {"search serve", "--gen", "LENGTHS"}, {"", "--heads", "INT"}, {"", "--kv-heads", "INT"}, {"", "--hidden", "INT"},
    {"", "--intermediate", "INT"}, {"", "--head-dim", "INT"}, {"", "--q-len", "INT"}, {"", "--kv-len", "INT"}, {"", "--m", "INT"},
    {"", "--k", "INT"}, {"", "--n", "INT"}, {"", "--tokens", "INT"}, {"train", "--tokens", "COUNT"},
    {"search train", "--tokens", "COUNT"}, {"", "--days", "DAYS"}, {"", "--price", "USD/h|CHIP=USD/h"},
    {"", "--requests", "INT"}, {"", "--draft", "MODEL|config.json|mtp"}, {"", "--spec-tokens", "INT"}, {"search serve", "--spec-tokens", "INT[,INT...]"},
    {"", "--accept", "RATE[,RATE...]"}, {"", "--accept-spread", "SD"}, {"", "--disagg", "P:D"}, {"search serve", "--disagg", "off|on|both"},
    {"", "--disagg-link-bw", "BANDWIDTH"}, {"", "--disagg-decode", "KEY=N[,KEY=N...]"}, {"", "--decode-tp", "INT[,INT...]|same"}, {"", "--decode-ep", "INT[,INT...]|same"}, {"", "--disagg-split", "match|search"}, {"", "--kv-transfer", "after|layerwise"}, {"", "--warmup-requests", "INT"}, {"", "--warmup-drain", "on|off"}, {"", "--seed", "INT"}, {"", "--max-num-seqs", "INT"}, {"", "--num-scheduler-steps", "INT"}, {"", "--scheduler-recv-interval", "INT"}, {"", "--allreduce-fusion", "on|off"}, {"", "--pdl", "on|off"},
    {"", "--max-batched-tokens", "INT"}, {"", "--kv-block", "INT"}, {"", "--kv-blocks", "INT"}, {"", "--replicas", "INT|auto"},
    {"", "--top", "INT"}, {"", "--threads", "INT"}, {"", "--chips-max", "INT"}, {"", "--batch-max", "INT"}, {"", "--tp-max", "INT"},
    {"", "--pp-max", "INT"}, {"", "--cp-max", "INT"}, {"", "--vpp-max", "INT"}, {"", "--micro-batch-max", "INT"},
    {"", "--prefix-groups", "INT"}, {"", "--prefix-tokens", "INT"}, {"", "--concurrency", "INT"}, {"", "--inputs", "INT"},
    {"", "--outputs", "INT"}, {"", "--bytes", "SIZE"}, {"", "--budget", "SIZE"}, {"", "--max-working-set", "SIZE"},
    {"", "--capacity", "LEVEL=SIZE"}, {"", "--dtype", "DTYPE"}, {"", "--kv-dtype", "DTYPE"}, {"", "--act-dtype", "DTYPE"},
    {"", "--weight-dtype", "DTYPE"}, {"", "--compute-dtype", "DTYPE"}, {"", "--a-dtype", "DTYPE"}, {"", "--b-dtype", "DTYPE"},
    {"", "--out-dtype", "DTYPE"}, {"", "--tensor-dtype", "DTYPE"}, {"", "--weight-dtypes", "DTYPE[,DTYPE...]"},
    {"", "--kv-dtypes", "DTYPE[,DTYPE...]"}, {"", "--horizon", "TIME"}, {"", "--step-overhead", "TIME"}, {"", "--front-end", "TIME"}, {"", "--eager-host", "TIME"}, {"", "--compiled-host", "TIME"}, {"", "--kv-descriptor", "TIME"}, {"", "--host-overhead", "TIME"}, {"", "--ttft-max", "TIME"},
    {"", "--tpot-max", "TIME"}, {"", "--memory-utilization", "FRACTION"}, {"", "--memory-margin", "FRACTION"},
    {"", "--memory-headroom", "FRACTION"}, {"", "--kv-memory-fraction", "FRACTION"}, {"", "--expert-imbalance", "FACTOR|auto"},
    {"", "--qps", "RATE[,RATE...]"}, {"", "--slo", "ttft_p99=TIME,..."}, {"", "--out", "FILE"}, {"", "--plot", "FILE.svg|.png"},
    {"", "--trace", "FILE.csv|.jsonl"}, {"", "--requests-out", "FILE.csv|.jsonl"}, {"", "--steps-out", "FILE.csv|.jsonl"}, {"", "--attention", "flash|naive"},
    {"", "--algo", "auto|ring|tree|direct|nvls"}, {"", "--recompute", "none|selective|full|auto"},
    {"", "--engine", "vllm|sglang|trtllm|static"}, {"", "--router", "round-robin|least-loaded|prefix"},
    {"", "--cp-algo", "ulysses|ring"}, {"", "--dp-overlap", "on|off"}, {"", "--overlap-efficiency", "FRACTION"},
    {"", "--framework", "megatron|megatron-lm|fsdp2"}, {"", "--prefetch", "INT"}, {"", "--grad-reduce-dtype", "fp32|bf16|fp16"},
    {"", "--prefix-caching", "on|off"}, {"", "--sampling", "greedy|random"},
    {"", "--chunked-prefill", "on|off"}, {"search serve", "--chunked-prefill", "on|off|both"}, {"", "--mixed-chunk", "on|off"}, {"", "--preemption", "recompute|swap"},
    {"", "--method", "detailed|quick"}, {"", "--shapes", "exact|seed"}, {"", "--format", "ncu|csv|torch|ert"},
    {"", "--kernels", "unfused|merged"}, {"", "--block-fp8-gemms", "triton|deepgemm"},
    {"", "--moe-a2a", "pairs|gather|deepep"},
    {"", "--grad-compression", "powersgd:RANK"}, {"", "--arrival", "poisson|gamma:CV|constant"},
    {"", "--sweep", "DIM=FROM..TO"}, {"", "--solve", "DIM"}, {"", "--shape", "ROWS,COLS"}, {"", "--tile", "BM,BK,BN"},
    {"", "--shard", "m|n|k"}, {"", "--impl", "flash|naive"}, {"", "--flops-per-element", "NUMBER"}, {"", "--unit", "matrix|vector"},
    {"plot sweep", "--from", "INT"}, {"plot sweep", "--to", "INT"}, {"", "--from", "FILE.json"}, {"", "--series", "KxN[,KxN...]"},
    {"", "--profile", "FILE"}, {"", "--points", "FILE.csv"}, {"", "--only", "GROUP[,GROUP...]"},
    {"search train", "--objective", "step_time|mfu|tokens_per_s"}, {"search infer", "--objective", "tokens_per_s_per_chip|latency"},
    {"", "--name", "NAME"}, {"", "--max-rate", "on|off"}, {"", "--pareto", "offered|saturation"}, {"", "--max-gpus", "INT"}, {"", "--lengths", "MIN..MAX"},
    {"", "--flops", "NUMBER"}, {"", "--context", "INT"}, {"", "--compare", "likwid"}, {"", "--buckets", "INT[,INT...]"},
};

void name_value_kinds(CLI::App& app) {
  const std::string path = command_path(&app);
  for (CLI::Option* o : app.get_options()) {
    if (o->get_expected_min() == 0) continue;  // a flag
    // Once an option: CLI11 builds the name anew at each call, and every process runs this
    // over every option of every command (under the sanitizers it was a third of `--help`).
    const std::string name = o->get_name();
    std::string_view kind;
    for (const ValueKind& v : kValueKinds) {
      if (v.flag != name) continue;
      if (v.command == path) {
        kind = v.kind;
        break;
      }
      if (v.command.empty() && kind.empty()) kind = v.kind;
    }
    if (!kind.empty()) o->type_name(std::string(kind));
  }
  for (CLI::App* sub : app.get_subcommands({})) name_value_kinds(*sub);
}

void register_advise(CLI::App& app, std::vector<Command>& commands) {
  auto* advise = app.add_subcommand("advise", "ranked, quantified advice on a profile or an analysis");
  advise->require_subcommand(1);
  register_advise_profile(advise, commands);
  register_advise_infer(advise, commands);
  register_advise_train(advise, commands);
}

// Each registration and the top-level commands it adds, in the order --help lists them.
struct Registration {
  std::initializer_list<std::string_view> names;
  void (*add)(CLI::App&, std::vector<Command>&);
};
const Registration kRegistrations[] = {
    {{"hw"}, register_hw},
    {{"op", "threshold"}, register_op},
    {{"models", "infer"}, register_infer},
    {{"serve"}, register_serve},
    {{"block"}, register_block},
    {{"train", "recompute"}, register_train},
    {{"fuse"}, register_fuse},
    {{"profile"}, register_profile},
    {{"plot"}, register_plot},
    {{"measure"}, register_measure},
    {{"validate"}, register_validate},
    {{"search"}, register_search},
    {{"calibrate"}, register_calibrate},
    {{"report"}, register_report_infer},
    {{"report-train"}, register_report_train},
    {{"report-serve"}, register_report_serve},
    {{"report-fleet"}, register_report_fleet},
    {{"advise"}, register_advise},
};

// The commands, all of them or only those of the registration that adds `only`: CLI11 checks
// each new option against the command's others, so building every command costs a process
// most of its start (0.3 of 0.45 s under the sanitizers, where the tests run ~840 processes).
void build_app(CLI::App& app, std::vector<Command>& commands, std::string_view only = {}) {
  app.require_subcommand(1);
  const auto adds = [&](const Registration& r) { return std::find(r.names.begin(), r.names.end(), only) != r.names.end(); };
  const bool known = std::any_of(std::begin(kRegistrations), std::end(kRegistrations), adds);
  for (const Registration& r : kRegistrations) {
    if (!known || adds(r)) r.add(app, commands);
  }
  name_value_kinds(app);
}

}  // namespace

std::vector<FlagInfo> command_flags(const std::vector<std::string>& path) {
  CLI::App app{"ridgeline", "ridgeline"};
  std::vector<Command> commands;
  build_app(app, commands, path.empty() ? std::string_view{} : std::string_view(path[0]));
  CLI::App* at = &app;
  for (const std::string& word : path) {
    CLI::App* next = nullptr;
    for (CLI::App* sub : at->get_subcommands({})) {
      if (sub->get_name() == word) next = sub;
    }
    if (next == nullptr) return {};
    at = next;
  }
  std::vector<FlagInfo> out;
  for (const CLI::Option* o : at->get_options()) {
    if (o->get_name() == "--help" || o->get_name().empty() || o->get_group().empty()) continue;  // help, hidden
    FlagInfo f;
    f.name = o->get_name();
    f.positional = f.name.rfind("--", 0) != 0;
    f.kind = o->get_expected_min() == 0 ? "" : o->get_type_name();
    f.default_value = o->get_default_str();
    f.description = o->get_description();
    f.required = o->get_required();
    f.repeatable = o->get_expected_max() > 1 || o->get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
    out.push_back(std::move(f));
  }
  return out;
}

int run(int argc, char** argv, std::ostream& out, std::ostream& err) {
  out_stream() = &out;
  exit_status() = 0;
  struct Restore {
    ~Restore() { out_stream() = &std::cout; }
  } restore;
  if (argc == 1) {
    out << kOverview;
    return 0;
  }
  const std::string_view first = argv[1];
  if (first == "--version" || first == "-V" || first == "version") {
    out << "ridgeline " << RIDGELINE_VERSION << "\n";
    return 0;
  }
  // `help` alone is the overview; `help COMMAND [SUBCOMMAND]` is that command's --help.
  std::vector<char*> help_args;
  if (first == "help") {
    if (argc == 2) {
      out << kOverview;
      return 0;
    }
    static char help_flag[] = "--help";
    help_args.push_back(argv[0]);
    for (int i = 2; i < argc; ++i) help_args.push_back(argv[i]);
    help_args.push_back(help_flag);
    argc = static_cast<int>(help_args.size());
    argv = help_args.data();
  }
  // Unknown commands and op kinds deserve better messages than CLI11's "a subcommand is required".
  static constexpr std::string_view kCommands[] = {"hw", "op", "threshold", "models", "infer", "block", "train",
                                                   "recompute", "fuse", "profile", "advise", "plot", "measure", "search", "report", "validate", "calibrate", "serve", "--help", "-h"};
  if (std::find(std::begin(kCommands), std::end(kCommands), std::string_view(argv[1])) == std::end(kCommands)) {
    err << "ridgeline: error: unknown command '" << ridgeline::one_line(argv[1])
              << "': expected hw, op, threshold, models, infer, serve, block, train, recompute, fuse, profile, advise, plot, measure, validate, calibrate, search or report\n";
    return 2;
  }
  if (argc >= 3 && std::string_view(argv[1]) == "threshold") {
    auto k = ridgeline::analysis::parse_op_kind(argv[2]);
    if (k && (ridgeline::analysis::is_collective(*k) || *k == ridgeline::analysis::OpKind::custom)) {
      err << "ridgeline: error: threshold: " << ridgeline::one_line(argv[2]) << " has no dimension to solve for (it has no FLOPs to become compute-bound)\n";
      return 2;
    }
  }
  if (argc >= 3 && (std::string_view(argv[1]) == "op" || std::string_view(argv[1]) == "threshold") && argv[2][0] != '-' &&
      !ridgeline::analysis::parse_op_kind(argv[2])) {
    err << "ridgeline: error: " << argv[1] << ": unknown op kind '" << ridgeline::one_line(argv[2]) << "': expected one of "
              << ridgeline::cli::op_kind_names() << "\n";
    return 2;
  }
  // `report --train ...` takes the train flags: it is the hidden command report-train;
  // `report --serve ...` the serve flags, report-serve; `report --fleet ...` search serve's, report-fleet.
  std::vector<char*> rewritten;
  if (argc >= 2 && std::string_view(argv[1]) == "report") {
    bool train = false, serve = false, fleet = false;
    for (int i = 2; i < argc; ++i) {
      train = train || std::string_view(argv[i]) == "--train";
      serve = serve || std::string_view(argv[i]) == "--serve";
      fleet = fleet || std::string_view(argv[i]) == "--fleet";
    }
    if (static_cast<int>(train) + static_cast<int>(serve) + static_cast<int>(fleet) > 1) {
      err << "ridgeline: error: report: --train, --serve and --fleet are different pages: choose one\n";
      return 2;
    }
    if (train || serve || fleet) {
      static char train_name[] = "report-train";
      static char serve_name[] = "report-serve";
      static char fleet_name[] = "report-fleet";
      rewritten.push_back(argv[0]);
      rewritten.push_back(train ? train_name : serve ? serve_name : fleet_name);
      for (int i = 2; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a != "--train" && a != "--serve" && a != "--fleet") rewritten.push_back(argv[i]);
      }
      argc = static_cast<int>(rewritten.size());
      argv = rewritten.data();
    }
  }
  CLI::App app{"ridgeline: roofline analysis of large-model workloads", "ridgeline"};
  std::vector<Command> commands;
  build_app(app, commands, argv[1]);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    err << "ridgeline: error: " << ridgeline::one_line(parse_error_message(app, e)) << "\n";
    return 2;
  }
  // An empty value ('--mem-bw ""') is not an absent one: say so rather than use the default.
  for (auto& c : commands) {
    if (!c.app->parsed()) continue;
    for (const CLI::Option* o : c.app->get_options()) {
      if (o->count() == 0 || o->get_expected_min() == 0) continue;  // not given, or a flag
      for (const std::string& v : o->results()) {
        if (v.empty()) {
          err << "ridgeline: error: " << (o->get_name().empty() ? "an argument" : o->get_name()) << ": an empty value: give one or leave the flag out\n";
          return 2;
        }
      }
    }
  }
  try {
    for (auto& c : commands) {
      if (c.app->parsed()) {
        c.run();
        return exit_status();
      }
    }
    err << "ridgeline: error: no command given: run `ridgeline` for an overview\n";
    return 2;
  } catch (const ridgeline::InputError& e) {
    err << "ridgeline: error: " << ridgeline::one_line(e.what()) << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    err << "ridgeline: error: out of memory: the input or the search is too large for this machine's memory (or its address-space limit)\n";
    return 2;
  } catch (const std::exception& e) {
    err << "ridgeline: internal error: " << ridgeline::one_line(e.what()) << "\n";
    return 1;
  }
}

}  // namespace ridgeline::cli
