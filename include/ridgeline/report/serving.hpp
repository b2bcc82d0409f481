#pragma once
/// Reports of `serve`: the summary as text and JSON (keys of ../shared/CLI.md), per-request
/// rows as CSV or JSON lines streamed to a file written atomically.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/core/files.hpp"
#include "ridgeline/hw/chip.hpp"
#include "ridgeline/model/model_config.hpp"
#include "ridgeline/serving/simulator.hpp"

namespace ridgeline::report {

/// A latency distribution: {mean, p50, p90, p95, p99, min, max, count}.
nlohmann::json summary_json(const serving::Summary& s);
/// "Poisson arrivals at 4 req/s", "64 concurrent clients (closed loop)", ...
std::string arrival_text(const serving::WorkloadSpec& w);
/// Why requests were rejected: "3 longer than the model's context of 131072 tokens (prompt + output), ...".
std::string rejections_text(const model::ModelConfig& m, const serving::ServingResult& r);
/// "prompt 1024, gen 256", or "lengths from the trace".
std::string lengths_text(const serving::WorkloadSpec& w);

/// "vllm (0.14+)": the engine's name and the releases its preset follows.
std::string engine_label(const serving::EngineConfig& e);
/// The engine as `serve --json` gives it (`engine`): its limits, graphs, host components and sources.
nlohmann::json engine_json(const serving::EngineConfig& e);
/// The engine's host components as `serve` prints them under its engine line, a line each, each
/// line starting with `indent`: the scheduler per step, the front end per request, the host time
/// of a kernel launched eagerly or compiled outside a graph, and an MLA model's attention op.
std::string engine_host_text(const model::ModelConfig& m, const serving::EngineConfig& e, std::string_view indent);

/// `serve --json`.
nlohmann::json serving_json(const model::ModelConfig& m, const hw::System& sys, const serving::ServeConfig& cfg,
                            const serving::ServingResult& r);
/// `serve` as text.
std::string serving_text(const model::ModelConfig& m, const hw::System& sys, const serving::ServeConfig& cfg,
                         const serving::ServingResult& r);
/// A `--qps` sweep: one row per rate (throughput against latency).
std::string serving_sweep_text(const std::vector<double>& qps, const std::vector<serving::ServingResult>& runs);

/// `--replicas auto`: the count found and every count tried.
nlohmann::json replica_search_json(const serving::ReplicaSearch& s);
std::string replica_search_text(const serving::ReplicaSearch& s, const serving::ServeConfig& cfg);

/// One request as a JSON object (the CSV columns as keys).
nlohmann::json request_json(const serving::RequestRecord& r);

/// Rows streamed to PATH (.csv or .jsonl) through a temporary beside it (an AtomicFile:
/// unpredictable name, created exclusively), renamed on commit(): a failed run leaves the old
/// file as it was.
class RowFile {
 public:
  /// InputError naming `flag` for an extension other than .csv / .jsonl or a file that cannot
  /// be written; a CSV starts with `header` (its column names, comma-separated).
  RowFile(std::string path, std::string_view flag, std::string_view header);
  ~RowFile();
  RowFile(const RowFile&) = delete;
  RowFile& operator=(const RowFile&) = delete;
  bool csv() const noexcept { return csv_; }
  /// The open stream; null once committed.
  std::FILE* stream() const noexcept { return f_; }
  /// One JSON object as a line.
  void write_json(const nlohmann::json& row);
  void commit();

 private:
  std::unique_ptr<AtomicFile> file_;
  std::FILE* f_ = nullptr;  // file_'s stream
  bool csv_ = true;
};

/// Per-request rows (`--requests-out`).
class RequestWriter {
 public:
  explicit RequestWriter(std::string path);
  void write(const serving::RequestRecord& r);
  void commit() { file_.commit(); }

 private:
  RowFile file_;
};

/// One step as a JSON object (the CSV columns as keys).
nlohmann::json step_json(const serving::StepRecord& s);

/// Every engine step of a run (`--steps-out`): its replica, start, period and device time, and
/// what it computed (prompt tokens and chunks, decoding sequences and their mean context).
class StepWriter {
 public:
  explicit StepWriter(std::string path);
  void write(const serving::StepRecord& s);
  void commit() { file_.commit(); }

 private:
  RowFile file_;
};

/// Column arrays of per-request records (pandas-ready): {"id": [...], "ttft_s": [...], ...}.
class RequestColumns {
 public:
  void add(const serving::RequestRecord& r);
  nlohmann::json json() const;

 private:
  std::vector<serving::RequestRecord> rows_;
};

}  // namespace ridgeline::report
