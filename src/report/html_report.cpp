#include "ridgeline/report/html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ridgeline/core/units.hpp"
#include "ridgeline/report/result_charts.hpp"
#include "ridgeline/report/svg.hpp"
#include "ridgeline/report/text.hpp"
#include "kernel_classes.hpp"
#include "spellings.hpp"

namespace ridgeline::report {

using nlohmann::json;

namespace {

double num(const json& j, const char* key) { return json_number(j, key); }

const json kEmptyObject = json::object();

// A phase's or step's three largest kernel classes from its split under `key`, as a card's
// detail goes on after its other parts: "; by kernel class: ..." ("" without the split).
std::string largest_classes(const json& o, const char* key) {
  const std::string by = o.is_object() && o.contains(key) ? by_class_text(by_class_from_json(o[key]), 3) : "";
  return by.empty() ? by : "; by kernel class: " + by;
}

std::string text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_null()) return "-";
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return fmt::format("{:g}", v.get<double>());
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// One input: its JSON key, the name a reader reads, and how its value shows.
struct Field {
  const char* key;
  const char* name;
  enum Shown { plain, time, fraction, percent } shown = plain;
};

// A group of inputs under a heading (empty: none) from one JSON object.
struct FieldGroup {
  const char* heading;
  const json* from;
  std::vector<Field> fields;
};

std::string field_value(const json& v, Field::Shown shown) {
  if (!v.is_number()) return text(v);
  const double x = v.get<double>();
  switch (shown) {
    case Field::time: return format_quantity(x, Quantity::time);
    case Field::fraction: return fmt::format("{:.3g}", x);
    case Field::percent: return fmt::format("{:.3g}%", 100 * x);
    case Field::plain: break;
  }
  return text(v);
}

// The inputs as one two-column table (so that every value starts at the same column), each
// group under its heading, each key by its name.
std::string inputs_table(const std::vector<FieldGroup>& groups) {
  std::string s = "<table class=\"kv\">\n";
  for (const FieldGroup& g : groups) {
    if (g.from == nullptr || !g.from->is_object()) continue;
    if (g.heading[0] != '\0') s += fmt::format("<tr class=\"group\"><th colspan=\"2\">{}</th></tr>\n", esc(g.heading));
    for (const Field& f : g.fields) {
      if (!g.from->contains(f.key)) continue;
      s += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", esc(f.name), esc(field_value((*g.from)[f.key], f.shown)));
    }
  }
  return s + "</table>\n";
}

// "$12.70" (format_usd's figure with its currency).
std::string dollars(double v) { return "$" + format_usd(v); }

struct Card {
  std::string label, value, note;
};

std::string cards(const std::vector<Card>& cs) {
  std::string s = "<div class=\"cards\">\n";
  for (const auto& c : cs) {
    s += fmt::format("<div class=\"card\"><div class=\"label\">{}</div><div class=\"value\">{}</div><div class=\"note\">{}</div></div>\n",
                     esc(c.label), esc(c.value), esc(c.note));
  }
  return s + "</div>\n";
}

// A sortable table: columns with a kind (text or a Quantity), rows of JSON values.
struct Column {
  const char* title;
  const char* key;
  enum Kind { label, time, bytes, flops, number, percent } kind;  // label: shown as text; percent: a fraction shown as 5.5%
};

std::string cell(const json& v, Column::Kind k) {
  if (k == Column::label) return fmt::format("<td class=\"l\">{}</td>", esc(text(v)));
  if (!v.is_number()) return fmt::format("<td>{}</td>", esc(text(v)));
  const double x = v.get<double>();
  std::string shown;
  switch (k) {
    case Column::time: shown = t(x); break;
    case Column::bytes: shown = size(x); break;
    case Column::flops: shown = format_si(x); break;
    case Column::percent: shown = fmt::format("{:.1f}%", 100 * x); break;
    default:
      // A count in full (99480 tokens, not 9.948e+04); other numbers to 4 digits.
      shown = x == std::floor(x) && std::abs(x) < 1e15 ? fmt::format("{}", static_cast<long long>(x)) : fmt::format("{:.4g}", x);
  }
  return fmt::format("<td data-v=\"{:.17g}\">{}</td>", x, esc(shown));
}

std::string table(const char* id, const std::vector<Column>& cols, const std::vector<const json*>& rows) {
  std::string s = fmt::format("<table class=\"sortable ops\" id=\"{}\">\n<thead><tr>", id);
  for (const auto& c : cols) {
    // Text columns read from the left, headings over their cells; numbers from the right.
    s += fmt::format("<th data-type=\"{}\" tabindex=\"0\"{}>{}</th>", c.kind == Column::label ? "text" : "num",
                     c.kind == Column::label ? " class=\"l\"" : "", esc(c.title));
  }
  s += "</tr></thead>\n<tbody>\n";
  for (const json* r : rows) {
    s += "<tr>";
    for (const auto& c : cols) s += cell(r->contains(c.key) ? (*r)[c.key] : json(nullptr), c.kind);
    s += "</tr>\n";
  }
  return s + "</tbody></table>\n";
}

constexpr const char* kStyle = R"(
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 13px; }
table.kv th { text-align: left; padding: 2px 16px 2px 0; font-weight: normal; color: #555; white-space: nowrap; vertical-align: top; }
table.kv td { padding: 2px 0; }
table.kv tr.group th { color: #222; font-weight: bold; padding-top: 10px; }
.scroll { overflow-x: auto; max-width: 100%; }
table.ops th, table.ops td { padding: 3px 8px; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; }
table.ops th { cursor: pointer; user-select: none; background: #f4f4f4; position: sticky; top: 0; }
table.ops th[aria-sort="ascending"]::after { content: " \25B2"; }
table.ops th[aria-sort="descending"]::after { content: " \25BC"; }
table.ops th.l, table.ops td.l { text-align: left; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 14px; min-width: 150px; }
.card .label { color: #666; font-size: 12px; } .card .value { font-size: 20px; } .card .note { color: #888; font-size: 11px; }
figure { margin: 1em 0; } figure svg { display: block; max-width: 100%; height: auto; }
p.more { color: #666; font-size: 13px; }
pre { white-space: pre-wrap; word-break: break-all; font-size: 12px; }
circle.point:hover { stroke: #000; stroke-width: 2; }
footer { margin-top: 3em; color: #888; font-size: 12px; }
)";

// Sorting, and the self-test run with #selftest (console errors, charts, a sort).
constexpr const char* kScript = R"(
(function () {
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message || e)); });
  var origError = console.error;
  console.error = function () { errors.push(Array.prototype.join.call(arguments, ' ')); origError.apply(console, arguments); };
  function key(td, num) { return num ? parseFloat(td.getAttribute('data-v')) : td.textContent; }
  function sortBy(th) {
    var table = th.closest('table'), body = table.tBodies[0], idx = Array.prototype.indexOf.call(th.parentNode.children, th);
    var num = th.getAttribute('data-type') === 'num';
    var asc = th.getAttribute('aria-sort') !== 'ascending';
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[idx], num), y = key(b.cells[idx], num);
      if (num) { x = isNaN(x) ? -Infinity : x; y = isNaN(y) ? -Infinity : y; }
      return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
  }
  document.querySelectorAll('table.sortable th').forEach(function (th) {
    th.addEventListener('click', function () { sortBy(th); });
    th.addEventListener('keydown', function (e) { if (e.key === 'Enter') sortBy(th); });
  });
  function selftest() {
    var out = { errors: errors, charts: [], sort: null };
    document.querySelectorAll('figure > svg').forEach(function (svg) {
      var r = svg.getBoundingClientRect();
      // The smallest text as drawn: its font size times the chart's scale on the page.
      var scale = svg.viewBox && svg.viewBox.baseVal && svg.viewBox.baseVal.width ? r.width / svg.viewBox.baseVal.width : 1;
      var smallest = Infinity;
      svg.querySelectorAll('text').forEach(function (t) { smallest = Math.min(smallest, parseFloat(getComputedStyle(t).fontSize) * scale); });
      // Text that leaves its chart (a label cut at the edge).
      var outside = 0;
      svg.querySelectorAll('text').forEach(function (t) {
        var b = t.getBoundingClientRect();
        if (b.width > 0 && (b.left < r.left - 1 || b.right > r.right + 1 || b.top < r.top - 1 || b.bottom > r.bottom + 1)) ++outside;
      });
      out.charts.push({ id: svg.parentNode.id, width: r.width, height: r.height,
                        points: svg.querySelectorAll('circle.point').length, elements: svg.querySelectorAll('*').length,
                        smallest_text_px: smallest, text_outside: outside });
    });
    // The page as read: wider than the window, and table cells broken over lines.
    var wrapped = 0;
    document.querySelectorAll('table td, table th').forEach(function (c) {
      var lh = parseFloat(getComputedStyle(c).fontSize) * 1.6;
      if (c.getBoundingClientRect().height > 2 * lh && c.closest('table.kv') === null) ++wrapped;
    });
    out.layout = { page_width: document.documentElement.scrollWidth, window_width: window.innerWidth, wrapped_cells: wrapped };
    var th = document.querySelector('table.sortable th[data-type="num"]');
    if (th) {
      var idx = Array.prototype.indexOf.call(th.parentNode.children, th);
      var values = function () {
        return Array.prototype.map.call(th.closest('table').tBodies[0].rows, function (r) {
          var v = parseFloat(r.cells[idx].getAttribute('data-v')); return isNaN(v) ? -Infinity : v; });
      };
      var sorted = function (v, dir) { for (var i = 1; i < v.length; ++i) if ((v[i] - v[i - 1]) * dir < 0) return false; return true; };
      th.click();
      var up = values();
      th.click();
      var down = values();
      out.sort = { table: th.closest('table').id, column: th.textContent, rows: up.length,
                   ascending: sorted(up, 1), descending: sorted(down, -1), distinct: up.length > 1 && up[0] !== up[up.length - 1] };
    }
    document.getElementById('selftest').textContent = JSON.stringify(out);
    document.title = 'selftest done';
  }
  if (location.hash === '#selftest') window.addEventListener('load', function () { setTimeout(selftest, 0); });
})();
)";

}  // namespace

std::string html_report(const json& j, const hw::ChipSpec& chip) {
  const bool train = j.contains("step_time_s");
  const std::string model = json_string(j, "model");
  const std::string title = train ? fmt::format("{} training on {} x {}", model, json_number(j, "gpus", 1), chip.display_name)
                                  : fmt::format("{} serving on {} x {}", model, json_number(j, "chips", 1), chip.display_name);
  std::string s = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  s += fmt::format("<title>ridgeline: {}</title>\n<style>{}</style>\n</head><body>\n", esc(title), kStyle);
  s += fmt::format("<h1>{}</h1>\n", esc(title));
  s += "<section id=\"inputs\"><h2>Inputs</h2>\n";
  if (train) {
    s += inputs_table({{"", &j, {{"model", "model"}, {"hw", "chip"}, {"gpus", "GPUs"}, {"tp", "tensor parallel"}, {"pp", "pipeline stages"},
                                 {"dp", "data parallel"}, {"cp", "context parallel"}, {"cp_algo", "context-parallel algorithm"},
                                 {"ep", "expert parallel"}, {"vpp", "virtual stages"}, {"zero", "ZeRO stage"},
                                 {"sequence_parallel", "sequence parallel"}, {"seq", "sequence length"}, {"micro_batch", "micro-batch"},
                                 {"global_batch", "global batch"}, {"micro_batches", "micro-batches per step"},
                                 {"recompute", "recomputation"}, {"dtype", "GEMM dtype"}}}});
  } else {
    s += inputs_table({{"", &j, {{"model", "model"}, {"hw", "chip"}, {"chips", "chips"}, {"tp", "tensor parallel"}, {"ep", "expert parallel"},
                                 {"batch", "batch (sequences)"}, {"prompt", "prompt tokens"}, {"gen", "generated tokens"},
                                 {"weight_dtype", "weights"}, {"act_dtype", "activations"}, {"kv_dtype", "KV cache"},
                                 {"attention", "attention"}, {"cuda_graphs", "CUDA graphs"}, {"kernels", "kernels"},
                                 {"algo", "collective algorithm"}}}});
  }
  s += "</section>\n<section id=\"headline\"><h2>Headline</h2>\n";
  if (train) {
    const json& mem = j.contains("memory_per_gpu") ? j["memory_per_gpu"] : json::object();
    // Its compute by kernel class (realistic, before overlap: docs/training.md#kernel-classes).
    s += cards({{"step time", t(num(j, "step_time_s")),
                 fmt::format("{} .. {}{}", t(num(j, "step_time_lower_s")), t(num(j, "step_time_upper_s")),
                             largest_classes(j, "time_by_kernel_class_s"))},
                {"tokens/s", fmt::format("{:.0f}", num(j, "tokens_per_s")), "whole job"},
                {"MFU", fmt::format("{:.1f}%", 100 * num(j, "mfu")), fmt::format("HFU {:.1f}%", 100 * num(j, "hfu"))},
                {"exposed communication", t(num(j, "exposed_comm_s")), fmt::format("bubble {}", t(num(j, "bubble_s")))},
                {"memory per GPU", size(num(mem, "total_bytes")),
                 fmt::format("of {} - {}", size(num(mem, "capacity_bytes")), json_bool(mem, "fits", false) ? "fits" : "DOES NOT FIT")}});
  } else {
    const json& mem = j.contains("memory") ? j["memory"] : json::object();
    const json prefill = j.contains("prefill") ? j["prefill"] : json::object();
    const json decode = j.contains("decode") ? j["decode"] : json::object();
    const auto classes = [](const json& phase) { return largest_classes(phase, "time_by_kernel_class_s"); };
    const json& last = decode.is_object() && decode.contains("last") ? decode["last"] : kEmptyObject;
    s += cards({{"TTFT", t(num(j, "ttft_s")), fmt::format("prefill, {}-bound{}", json_string(prefill, "bound", "?"), classes(prefill))},
                {"TPOT", t(num(j, "tpot_s")), fmt::format("mean over the generation{}", classes(last).empty() ? "" : "; its last step" + classes(last))},
                {"end to end", t(num(j, "e2e_latency_s")), fmt::format("{} .. {}", t(num(j, "e2e_latency_lower_s")), t(num(j, "e2e_latency_upper_s")))},
                {"output tokens/s per chip", fmt::format("{:.1f}", num(j, "output_tokens_per_s_per_chip")), "generated tokens"},
                {"memory per chip", size(num(mem, "total_bytes")),
                 fmt::format("of {} - {}", size(num(mem, "capacity_bytes")), json_bool(mem, "fits", false) ? "fits" : "DOES NOT FIT")},
                {"largest batch", text(j.contains("max_batch") ? j["max_batch"] : json(nullptr)), "that fits"},
                {"decode floor", t(json_number(decode, "kernel_fixed_s") + json_number(decode, "link_latency_s")),
                 fmt::format("of a step: kernels' fixed times {}, collective latency {}", t(json_number(decode, "kernel_fixed_s")),
                             t(json_number(decode, "link_latency_s")))}});
  }
  s += "</section>\n<section id=\"charts\"><h2>Charts</h2>\n<p>Hover a point for the op, its layer group and repeat count.</p>\n";
  s += "<figure id=\"chart-roofline\">" + ops_roofline_svg(j, chip) + "</figure>\n";
  // Each panel of the breakdown at its own size (side by side they were scaled to half: 6 px text).
  s += "<figure id=\"chart-breakdown\">";
  for (const std::string& panel : breakdown_panels(j, "the report")) s += panel;
  s += "</figure>\n";
  s += "<figure id=\"chart-memory\">" + memory_svg(j, "the report") + "</figure>\n</section>\n";
  std::vector<const json*> rows;
  if (j.contains("ops") && j["ops"].is_array()) {
    for (const auto& op : j["ops"]) rows.push_back(&op);
  }
  s += "<section id=\"ops\"><h2>Every op</h2>\n<p>Click a column to sort; click again to reverse.</p>\n<div class=\"scroll\">\n";
  if (train) {
    s += table("ops-table", {{"op", "name", Column::label}, {"group", "group", Column::label}, {"repeat", "repeat", Column::number},
                             {"kind", "kind", Column::label}, {"FLOPs", "flops", Column::flops}, {"bytes", "bytes", Column::bytes},
                             {"FLOPs/byte", "intensity_flops_per_byte", Column::number}, {"bound", "bound", Column::label},
                             {"forward", "t_forward_lower_s", Column::time}, {"backward", "t_backward_lower_s", Column::time}},
               rows);
  } else {
    s += table("ops-table", {{"op", "name", Column::label}, {"phase", "phase", Column::label}, {"group", "group", Column::label},
                             {"repeat", "repeat", Column::number}, {"kind", "kind", Column::label}, {"FLOPs", "flops", Column::flops},
                             {"bytes", "bytes", Column::bytes}, {"FLOPs/byte", "intensity_flops_per_byte", Column::number},
                             {"bound", "bound", Column::label}, {"lower", "t_lower_s", Column::time},
                             {"lower x repeat", "t_total_lower_s", Column::time}, {"share", "share", Column::percent},
                             {"realistic", "t_realistic_s", Column::time}, {"kernel class", "kernel_class", Column::label}},
               rows);
  }
  s += "</div>\n</section>\n<pre id=\"selftest\" hidden></pre>\n";
  s += "<footer>Made by ridgeline from first principles: FLOPs over compute rates, bytes over bandwidths. Times per op are lower bounds "
       "(perfect overlap of its parts), and for inference also realistic (its kernel class's fixed time and fractions); see docs/cost-model.md.</footer>\n";
  s += fmt::format("<script>{}</script>\n</body></html>\n", kScript);
  return s;
}

std::string html_serving_report(const json& j) {
  const json engine = j.contains("engine") && j["engine"].is_object() ? j["engine"] : json::object();
  const json workload = j.contains("workload") && j["workload"].is_object() ? j["workload"] : json::object();
  const double replicas = json_number(j, "replicas", 1);
  const std::string title = fmt::format("{} served by {} on {} replica{} of {} x {}", json_string(j, "model"), json_string(engine, "name", "?"),
                                        replicas, replicas == 1 ? "" : "s", num(j, "tp") * json_number(j, "ep", 1), json_string(j, "hw"));
  std::string s = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  s += fmt::format("<title>ridgeline: {}</title>\n<style>{}</style>\n</head><body>\n", esc(title), kStyle);
  s += fmt::format("<h1>{}</h1>\n", esc(title));
  s += "<section id=\"inputs\"><h2>Inputs</h2>\n";
  s += inputs_table({{"", &j, {{"model", "model"}, {"hw", "chip"}, {"tp", "tensor parallel"}, {"ep", "expert parallel"},
                               {"replicas", "replicas"}, {"router", "router"}}},
                     {"workload", &workload, {{"arrival", "arrivals"}, {"qps", "rate (requests/s)"}, {"concurrency", "concurrent clients"},
                                              {"prompt", "prompt tokens"}, {"gen", "generated tokens"}, {"requests", "requests"},
                                              {"warmup_requests", "warm-up requests"}, {"seed", "seed"}, {"prefix_groups", "prefix groups"},
                                              {"prefix_tokens", "shared prefix tokens"}}},
                     {"engine", &engine, {{"name", "engine"}, {"max_batched_tokens", "tokens per step (budget)"},
                                          {"max_num_seqs", "sequences at most"}, {"chunked_prefill", "chunked prefill"},
                                          {"kv_block", "KV block (tokens)"}, {"kv_memory_fraction", "memory fraction", Field::fraction},
                                          {"prefix_caching", "prefix caching"}, {"decode_graphs", "decode steps"},
                                          {"mixed_graphs", "mixed steps"},
                                          {"graph_max_tokens", "largest graph of any step (tokens; 0: no cap)"},
                                          {"capture_follows_seqs", "largest graph from the sequence limit (vLLM's default)"},
                                          {"mla_attention_op", "what MLA's attention op holds (vLLM: absorbed; 0.8: projections)"},
                                          {"mla_op_host_s", "host time per kernel of MLA's attention op", Field::time},
                                          {"mla_op_call_host_s", "host time per call of MLA's attention op", Field::time},
                                          {"mla_pad_v", "MLA's prefill pads V to the keys' width"},
                                          {"mxfp4_expert_align", "MXFP4 experts padded to a multiple of (0: none)"},
                                          {"expert_tiles_from_tokens", "DeepGEMM's grouped experts from (tokens a step; 0: any)"},
                                          {"expert_swap_ab_below", "DeepGEMM port's experts swap A and B below (tokens a step; 0: never)"},
                                          {"expert_small_tiles_upto", "DeepGEMM port's experts in 64-row tiles up to (tokens a step; 0: never)"},
                                          {"compiled_host_s", "host time per compiled kernel outside a graph", Field::time},
                                          {"step_overhead_s", "host time per step", Field::time},
                                          {"per_request_overhead_s", "host time per request in a step", Field::time},
                                           {"front_end_s", "server front end per request", Field::time},
                                          {"overlap_scheduling", "host overlapped with the device"},
                                          {"scheduler_recv_interval", "new requests read every (decode steps; 1: every step)"},
                                          {"preemption", "preemption"},
                                          {"sources", "sources"}}}});
  auto stat = [&](const char* key, const char* q) {
    return j.contains(key) && j[key].is_object() ? json_number(j[key], q) : 0.0;
  };
  const json kv = j.contains("kv_utilisation") ? j["kv_utilisation"] : json::object();
  s += "</section>\n<section id=\"headline\"><h2>Headline</h2>\n";
  // (A file may hold anything under a key: only an object is read.)
  const json& prompt_step = j.contains("prompt_step") && j["prompt_step"].is_object() ? j["prompt_step"] : kEmptyObject;
  const auto classes = [](const json& step) { return largest_classes(step, "by_kernel_class_s"); };
  s += cards({{"TTFT p50 / p99", fmt::format("{} / {}", t(stat("ttft_s", "p50")), t(stat("ttft_s", "p99"))), "arrival to first token"},
              {"TPOT p50 / p99", fmt::format("{} / {}", t(stat("tpot_s", "p50")), t(stat("tpot_s", "p99"))), "per request, mean between its tokens"},
              {"output tokens/s", fmt::format("{:.4g}", num(j, "output_tokens_per_s")),
               fmt::format("{:.4g} per GPU, {:.4g} req/s", num(j, "output_tokens_per_s_per_gpu"), num(j, "requests_per_s"))},
              {"sustainable", json_bool(j, "sustainable", true) ? "yes" : "NO",
               json_bool(j, "sustainable", true) ? "the queue stays bounded"
                                                 : fmt::format("largest sustainable rate {}", text(j.contains("max_sustainable_qps") ? j["max_sustainable_qps"] : json(nullptr)))},
              {"KV cache used", fmt::format("{:.1f}%", 100 * json_number(kv, "mean")), fmt::format("at most {:.1f}%; {} preemptions", 100 * json_number(kv, "max"), num(j, "preemptions"))},
              {"goodput", j.contains("goodput_requests_per_s") ? fmt::format("{:.4g} req/s", num(j, "goodput_requests_per_s")) : "-",
               j.contains("slo_met") ? (json_bool(j, "slo_met", false) ? "SLO met" : "SLO not met") : "no --slo given"},
              {"mean decode step", t(json_number(j.contains("decode_step") ? j["decode_step"] : json::object(), "device_s")),
               j.contains("decode_step") ? fmt::format("{:.0f} sequences: kernels' fixed times {}, collective latency {}{}",
                                                       json_number(j["decode_step"], "sequences"), t(json_number(j["decode_step"], "kernel_fixed_s")),
                                                       t(json_number(j["decode_step"], "link_latency_s")), classes(j["decode_step"]))
                                         : ""},
              {"mean prompt step", prompt_step.contains("launch") ? t(json_number(prompt_step, "device_s")) : "-",
               prompt_step.contains("launch") ? fmt::format("{:.3g} chunks of {:.0f} tokens, {:.3g} decodes; launched {}{}", json_number(prompt_step, "chunks"),
                                                            json_number(prompt_step, "chunk_tokens"), json_number(prompt_step, "decodes"),
                                                            launched(text(prompt_step["launch"])), classes(prompt_step))
                                              : "no step computed prompt tokens"}});
  s += "</section>\n<section id=\"charts\"><h2>Charts</h2>\n";
  s += "<figure id=\"chart-latency\">" + serving_latency_svg(j, "the report") + "</figure>\n";
  s += "<figure id=\"chart-timeline\">" + serving_timeline_svg(j, "the report") + "</figure>\n";
  s += "<figure id=\"chart-kv\">" + serving_kv_svg(j, "the report") + "</figure>\n</section>\n";
  // The percentile table: one row per metric.
  std::vector<json> rows;
  for (const auto& [key, name] : {std::pair{"ttft_s", "TTFT"}, {"tpot_s", "TPOT"}, {"itl_s", "ITL"}, {"e2e_s", "E2E"}, {"queue_s", "queue"}}) {
    if (!j.contains(key) || !j[key].is_object()) continue;
    json r = j[key];
    r["metric"] = name;
    rows.push_back(r);
  }
  std::vector<const json*> ptrs;
  for (const json& r : rows) ptrs.push_back(&r);
  s += "<section id=\"latency\"><h2>Latencies</h2>\n<p>Click a column to sort; click again to reverse.</p>\n";
  s += "<div class=\"scroll\">\n" +
       table("latency-table", {{"metric", "metric", Column::label}, {"mean", "mean", Column::time}, {"p50", "p50", Column::time},
                               {"p90", "p90", Column::time}, {"p95", "p95", Column::time}, {"p99", "p99", Column::time},
                               {"max", "max", Column::time}, {"samples", "count", Column::number}},
             ptrs) +
       "</div>\n";
  s += "</section>\n<pre id=\"selftest\" hidden></pre>\n";
  s += "<footer>Made by ridgeline: a request-level simulation whose every step is priced from first principles (docs/serving.md).</footer>\n";
  s += fmt::format("<script>{}</script>\n</body></html>\n", kScript);
  return s;
}

std::string html_fleet_report(const json& search, const json& best_run, const std::string& pareto_svg) {
  const json best = search.contains("best") ? search["best"] : json(nullptr);
  const std::string title = fmt::format("{}: serving fleets for {}", json_string(search, "model"), json_string(search, "workload"));
  std::string s = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  s += fmt::format("<title>ridgeline: {}</title>\n<style>{}</style>\n</head><body>\n", esc(title), kStyle);
  s += fmt::format("<h1>{}</h1>\n", esc(title));
  s += "<section id=\"inputs\"><h2>Inputs</h2>\n";
  json inputs = search;
  std::string rejected;
  if (search.contains("rejected") && search["rejected"].is_object()) {
    for (const auto& [reason, n] : search["rejected"].items()) rejected += fmt::format("{}{} {}", rejected.empty() ? "" : ", ", reason, text(n));
  }
  inputs["rejected"] = rejected.empty() ? "none" : rejected;
  // --margin band: each deployment's own headroom, from its class (planning::band_slo).
  if (search.value("margin_band", false)) inputs["margin"] = "each deployment's class's median error (--margin band)";
  if (inputs.contains("ranked_by")) inputs["ranked_by"] = json_string(search, "ranked_by") == "usd_per_hour" ? "cost per hour" : "GPUs";
  s += inputs_table({{"", &inputs, {{"model", "model"}, {"workload", "workload"}, {"slo", "SLO"}, {"margin", "headroom", Field::percent},
                                    {"ranked_by", "ranked by"}, {"evaluated", "deployments evaluated"},
                                    {"feasible_count", "feasible"}, {"rejected", "rejected, by reason"},
                                    {"simulations", "simulations"}, {"elapsed_s", "search time", Field::time}}}});
  s += "</section>\n<section id=\"headline\"><h2>The chosen deployment</h2>\n";
  // A deployment's layout: its replicas, or its prefill and decode instances.
  auto layout = [](const json& d) {
    const json g = d.contains("disagg") ? d["disagg"] : json(nullptr);
    return g.is_object() ? fmt::format("{:.0f} prefill + {:.0f} decode instances", json_number(g, "prefill"), json_number(g, "decode"))
                         : fmt::format("{:.0f} replica{}", json_number(d, "replicas"), json_number(d, "replicas") == 1 ? "" : "s");
  };
  auto p99 = [](const json& d, const char* key) { return d.contains(key) && d[key].is_object() ? json_number(d[key], "p99") : 0.0; };
  if (best.is_object()) {
    const double usd = json_number(best, "usd_per_hour");
    s += cards({{"deployment", fmt::format("{} tp {}", json_string(best, "hw"), json_number(best, "tp")),
                 fmt::format("{}, {} engine", layout(best), json_string(best, "engine"))},
                {"GPUs", fmt::format("{:.0f}", json_number(best, "gpus")),
                 json_string(search, "ranked_by") == "usd_per_hour" ? "the cheapest fleet" : "the fewest GPUs"},
                {"cost", usd > 0 ? dollars(usd) + "/h" : "-",
                 usd > 0 ? dollars(json_number(best, "usd_per_million_output_tokens")) + " per million output tokens" : "no price given"},
                {"TTFT p99 / TPOT p99", fmt::format("{} / {}", t(p99(best, "ttft_s")), t(p99(best, "tpot_s"))), "within the SLO"},
                {"output tokens/s", fmt::format("{:.4g}", json_number(best, "output_tokens_per_s")),
                 fmt::format("{:.4g} per GPU, {:.4g} per user", json_number(best, "output_tokens_per_s_per_gpu"),
                             json_number(best, "output_tokens_per_s_per_user"))},
                {"largest rate", best.contains("max_qps") && best["max_qps"].is_number() ? fmt::format("{:.4g} req/s", json_number(best, "max_qps")) : "-",
                 "within the SLO"}});
    if (best.contains("command")) s += fmt::format("<pre>{}</pre>\n", esc(json_string(best, "command")));
  } else {
    s += "<p>No deployment of the space meets the SLO.</p>\n";
  }
  s += "</section>\n<section id=\"charts\"><h2>Charts</h2>\n";
  if (!pareto_svg.empty()) s += "<figure id=\"chart-pareto\">" + pareto_svg + "</figure>\n";
  if (best_run.is_object()) {
    s += "<figure id=\"chart-latency\">" + serving_latency_svg(best_run, "the chosen deployment") + "</figure>\n";
    s += "<figure id=\"chart-timeline\">" + serving_timeline_svg(best_run, "the chosen deployment") + "</figure>\n";
  }
  s += "</section>\n";
  // The cost table: the feasible deployments listed by the search, cheapest first, those that
  // differ only in their sequence limit and ran the same on one row (its limits a range), the
  // first kRows rows shown and the rest counted. Columns that do not vary are left out.
  constexpr std::size_t kRows = 20;
  struct Row {
    json r;
    std::int64_t seqs_lo = 0, seqs_hi = 0;
    std::size_t deployments = 0;
  };
  std::vector<Row> groups;
  std::size_t listed = 0;
  auto same = [&](const json& a, const json& b) {
    for (const char* k : {"hw", "tp", "ep", "experts", "engine", "max_batched_tokens", "chunked_prefill", "graph_padding", "spec_tokens", "draft",
                          "weight_dtype", "kv_dtype", "replicas", "disagg", "gpus"}) {
      if (a.value(k, json(nullptr)) != b.value(k, json(nullptr))) return false;
    }
    return p99(a, "ttft_s") == p99(b, "ttft_s") && p99(a, "tpot_s") == p99(b, "tpot_s") &&
           a.value("output_tokens_per_s", 0.0) == b.value("output_tokens_per_s", 0.0) && a.value("max_qps", json(nullptr)) == b.value("max_qps", json(nullptr));
  };
  std::vector<const json*> feasible;
  if (search.contains("feasible") && search["feasible"].is_array()) {
    for (const json& d : search["feasible"]) feasible.push_back(&d);
  }
  for (std::size_t i = 0; i < feasible.size(); ++listed) {
    const json& d = *feasible[i];
    std::size_t j = i + 1;
    std::int64_t lo = d.value("max_num_seqs", std::int64_t{0}), hi = lo;
    for (; j < feasible.size() && same(d, *feasible[j]); ++j) {
      const std::int64_t q = feasible[j]->value("max_num_seqs", std::int64_t{0});
      lo = std::min(lo, q), hi = std::max(hi, q);
    }
    Row row;
    row.seqs_lo = lo, row.seqs_hi = hi, row.deployments = j - i;
    // "2 x tp 1", "1P+2D tp 2/8": the instances and their parallelism in one cell.
    const json g = d.contains("disagg") ? d["disagg"] : json(nullptr);
    std::string shape = g.is_object() ? fmt::format("{:.0f}P+{:.0f}D tp {:.0f}/{:.0f}", json_number(g, "prefill"), json_number(g, "decode"),
                                                    json_number(g, "prefill_tp"), json_number(g, "decode_tp"))
                                      : fmt::format("{:.0f} x tp {:.0f}", json_number(d, "replicas"), json_number(d, "tp"));
    if (json_number(d, "ep", 1) > 1) shape += fmt::format(" ep {:.0f}", json_number(d, "ep"));
    if (d.value("experts", "") == "ep") shape += ", experts ep";
    const double slack = json_number(d, "slo_slack", 1);
    row.r = json{{"hw", d.value("hw", "")}, {"layout", shape}, {"engine", d.value("engine", "")},
                 {"seqs", lo == hi ? fmt::format("{}", lo) : fmt::format("{}-{}", lo, hi)}, {"seqs_v", hi},
                 {"tokens", d.value("max_batched_tokens", 0)},
                 {"chunked", d.contains("chunked_prefill") && d["chunked_prefill"].is_boolean() ? json(d["chunked_prefill"].get<bool>() ? "on" : "off") : json(nullptr)},
                 {"pad", d.contains("graph_padding") && d["graph_padding"].is_boolean() ? json(d["graph_padding"].get<bool>() ? "on" : "off") : json(nullptr)},
                 {"spec", d.value("spec_tokens", 0) > 0 ? json(d.value("spec_tokens", 0)) : json(nullptr)},
                 {"draft", d.contains("draft") ? d["draft"] : json(nullptr)}, {"weights", d.contains("weight_dtype") ? d["weight_dtype"] : json(nullptr)},
                 {"kv", d.contains("kv_dtype") ? d["kv_dtype"] : json(nullptr)}, {"gpus", d.value("gpus", 0.0)},
                 {"usd_per_hour", d.value("usd_per_hour", 0.0)}, {"usd_per_million_output_tokens", d.value("usd_per_million_output_tokens", 0.0)},
                 {"ttft_p99", p99(d, "ttft_s")}, {"tpot_p99", p99(d, "tpot_s")},
                 {"per_gpu", d.value("output_tokens_per_s_per_gpu", 0.0)}, {"per_user", d.value("output_tokens_per_s_per_user", 0.0)},
                 {"max_qps", d.contains("max_qps") ? d["max_qps"] : json(nullptr)},
                 {"spare", json_string(d, "slo_binding").empty() ? json(nullptr) : json(slack)}};
    groups.push_back(std::move(row));
    i = j;
  }
  // A column is shown when some row has a value in it that differs from another row's (or,
  // for optional knobs, when any row has one).
  auto varies = [&](const char* key) {
    for (const Row& g : groups) {
      if (g.r[key] != groups.front().r[key]) return true;
    }
    return false;
  };
  auto any = [&](const char* key) {
    return std::any_of(groups.begin(), groups.end(), [&](const Row& g) { return !g.r[key].is_null(); });
  };
  std::vector<Column> cols{{"hw", "hw", Column::label}, {"layout", "layout", Column::label}};
  if (varies("engine")) cols.push_back({"engine", "engine", Column::label});
  cols.push_back({"seqs", "seqs", Column::label});
  if (varies("tokens")) cols.push_back({"tokens", "tokens", Column::number});
  if (any("chunked") && varies("chunked")) cols.push_back({"chunked", "chunked", Column::label});
  if (any("pad") && varies("pad")) cols.push_back({"pad", "graph padding", Column::label});
  if (any("spec")) cols.push_back({"spec", "spec", Column::number});
  if (any("draft") && varies("draft")) cols.push_back({"draft", "draft", Column::label});
  if (varies("weights")) cols.push_back({"weights", "weights", Column::label});
  if (varies("kv")) cols.push_back({"KV", "kv", Column::label});
  cols.push_back({"GPUs", "gpus", Column::number});
  const bool priced = any("usd_per_hour") && json_string(search, "ranked_by") == "usd_per_hour";
  if (priced) {
    cols.push_back({"$/h", "usd_per_hour", Column::number});
    cols.push_back({"$/M out", "usd_per_million_output_tokens", Column::number});
  }
  for (const Column& c : std::initializer_list<Column>{{"TTFT p99", "ttft_p99", Column::time}, {"TPOT p99", "tpot_p99", Column::time},
                                                        {"tok/s/GPU", "per_gpu", Column::number}, {"tok/s/user", "per_user", Column::number}}) {
    cols.push_back(c);
  }
  if (any("max_qps")) cols.push_back({"max qps", "max_qps", Column::number});
  if (any("spare")) cols.push_back({"spare", "spare", Column::percent});
  std::vector<const json*> ptrs;
  for (std::size_t i = 0; i < groups.size() && i < kRows; ++i) ptrs.push_back(&groups[i].r);
  std::size_t shown_deployments = 0;
  for (std::size_t i = 0; i < groups.size() && i < kRows; ++i) shown_deployments += groups[i].deployments;
  s += "<section id=\"cost\"><h2>Feasible deployments and their cost</h2>\n";
  s += fmt::format("<p>{} first: {} row{} for the {} {} of {} feasible deployments; a row joins those that differ only in their "
                   "sequence limit and ran the same. Click a column to sort; click again to reverse.</p>\n",
                   priced ? "Cheapest" : "Fewest GPUs", ptrs.size(), ptrs.size() == 1 ? "" : "s", shown_deployments,
                   priced ? "cheapest" : "smallest", json_number(search, "feasible_count"));
  s += "<div class=\"scroll\">\n" + table("cost-table", cols, ptrs) + "</div>\n";
  if (groups.size() > kRows) {
    s += fmt::format("<p class=\"more\">{} more rows ({} deployments) are in `ridgeline search serve ... --json` (its `feasible` list, "
                     "with `--top`).</p>\n", groups.size() - kRows, feasible.size() - shown_deployments);
  }
  s += "</section>\n<pre id=\"selftest\" hidden></pre>\n";
  s += "<footer>Made by ridgeline: every deployment simulated request by request, every step priced from first principles "
       "(docs/serving.md#capacity-planning-search-serve).</footer>\n";
  s += fmt::format("<script>{}</script>\n</body></html>\n", kScript);
  return s;
}

}  // namespace ridgeline::report
