// Launch files: scripts, TensorRT-LLM's YAML and a README (docs/deploy.md).
#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "ridgeline/core/error.hpp"
#include "ridgeline/report/launch.hpp"
#include "ridgeline/report/text.hpp"

namespace ridgeline::report {

namespace {

std::string engine_title(planning::LaunchTarget t) {
  switch (t) {
    case planning::LaunchTarget::vllm: return "vLLM";
    case planning::LaunchTarget::sglang: return "SGLang";
    case planning::LaunchTarget::trtllm: return "TensorRT-LLM";
  }
  return "?";
}

// The YAML of dotted keys, nested: "a.b: 1" under "a:". Keys of one parent are consecutive.
std::string yaml_text(const std::vector<planning::LaunchYaml>& entries) {
  std::string out, parent;
  for (const planning::LaunchYaml& y : entries) {
    const std::size_t dot = y.key.find('.');
    if (dot == std::string::npos) {
      parent.clear();
      out += fmt::format("{}: {}\n", y.key, y.value);
      continue;
    }
    const std::string p = y.key.substr(0, dot);
    if (p != parent) out += p + ":\n";
    parent = p;
    out += fmt::format("  {}: {}\n", y.key.substr(dot + 1), y.value);
  }
  return out;
}

std::string yaml_name(const planning::LaunchWorker& w) { return fmt::format("{}-extra-llm-api-config.yml", name(w.role)); }

}  // namespace

std::string launch_command(const planning::LaunchWorker& w) {
  std::string s;
  for (const std::string& c : w.command) s += (s.empty() ? "" : " ") + shell_word(c);
  for (const planning::LaunchArg& a : w.args) {
    s += " \\\n  " + a.flag;
    // The port is the script's PORT when it is set.
    if (a.flag == "--port") s += fmt::format(" \"${{PORT:-{}}}\"", a.value);
    else if (!a.value.empty()) s += " " + shell_word(a.value);
  }
  return s;
}

std::vector<LaunchFile> launch_files(const planning::LaunchPlan& plan, const std::vector<std::string>& heading) {
  std::vector<LaunchFile> files;
  const std::string engine = engine_title(plan.target);
  std::string readme = fmt::format("# {} launch of a ridgeline deployment\n\n", engine);
  for (const std::string& h : heading) readme += h + "\n";
  if (!heading.empty()) readme += "\n";
  std::int64_t gpus = 0;
  for (const planning::LaunchWorker& w : plan.workers) gpus += w.instances * w.gpus_per_instance;
  readme += fmt::format("Engine: {}, its flags as {} lists them (the `{}` preset the simulation ran). Model: {}. Fleet: {} GPUs.\n\n",
                        engine, plan.release, plan.preset, plan.model, gpus);
  readme += "| instances | role | GPUs each | port | script |\n| --- | --- | --- | --- | --- |\n";
  for (const planning::LaunchWorker& w : plan.workers) {
    readme += fmt::format("| {} | {} | {} | {} | `{}.sh` |\n", w.instances, name(w.role), w.gpus_per_instance, w.port, name(w.role));
  }
  readme += "\nRun each instance on its own GPUs, e.g. `CUDA_VISIBLE_DEVICES=0,1,2,3 PORT=8000 sh replica.sh`; "
            "`PORT` overrides the port.\n";
  if (!plan.notes.empty()) {
    readme += "\n## Notes\n\n";
    for (const std::string& n : plan.notes) readme += "- " + n + "\n";
  }
  readme += fmt::format("\n## Flags\n\nEvery flag{} is in the list of {} {} (ridgeline's data/engines/): {}\n",
                        plan.target == planning::LaunchTarget::trtllm ? " and YAML key" : "", engine, plan.release, plan.flags_source);
  files.push_back({"README.md", readme, false});
  for (const planning::LaunchWorker& w : plan.workers) {
    std::string sh = "#!/bin/sh\n";
    sh += fmt::format("# {} {} ({} of {}; {} GPUs each), written by ridgeline --emit {}: see README.md.\n", engine, plan.release, name(w.role),
                      w.instances, w.gpus_per_instance, name(plan.target));
    for (const planning::LaunchArg& v : w.env) sh += fmt::format("export {}={}\n", v.flag, shell_word(v.value));
    if (!w.yaml.empty()) sh += "cd \"$(dirname \"$0\")\"  # " + yaml_name(w) + " is beside this script\n";
    sh += "exec " + launch_command(w) + "\n";
    files.push_back({fmt::format("{}.sh", name(w.role)), sh, true});
    if (!w.yaml.empty()) {
      files.push_back({yaml_name(w), fmt::format("# {} {} extra LLM-API options ({}), written by ridgeline --emit {}\n", engine, plan.release,
                                                 name(w.role), name(plan.target)) + yaml_text(w.yaml), false});
    }
  }
  return files;
}

void write_launch_files(const std::string& dir, const std::vector<LaunchFile>& files, const char* flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw InputError(fmt::format("{}: {}: cannot create the directory", flag, dir));
  for (const LaunchFile& f : files) {
    const std::string path = (fs::path(dir) / f.name).string();
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << f.text;
      out.close();
      if (!out) {
        std::remove(tmp.c_str());
        throw InputError(fmt::format("{}: {}: cannot write here", flag, path));
      }
    }
    if (f.executable) ::chmod(tmp.c_str(), 0755);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::remove(tmp.c_str());
      throw InputError(fmt::format("{}: {}: cannot replace the file", flag, path));
    }
  }
}

}  // namespace ridgeline::report
