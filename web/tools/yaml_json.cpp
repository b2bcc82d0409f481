// yaml_json IN_DIR OUT_DIR FILE...: each hardware file (a path under IN_DIR) written under
// OUT_DIR at the same path, as JSON: YAML maps become objects (keys in file order),
// sequences arrays, scalars strings holding their text as yaml-cpp reads it, null values
// null. JSON is YAML (flow style), so the result is still a hardware file: the WebAssembly
// build (docs/web.md) reads it with its JSON-backed stand-in for yaml-cpp
// (web/compat/yaml-cpp/yaml.h), through the same parse_chip_yaml as the CLI.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

nlohmann::ordered_json to_json(const YAML::Node& n, int depth) {
  if (depth > 64) throw std::runtime_error("nesting deeper than 64 levels");
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::ordered_json o = nlohmann::ordered_json::object();
      for (const auto& kv : n) {
        const std::string key = kv.first.Scalar();
        if (o.contains(key)) throw std::runtime_error("duplicate key '" + key + "'");
        o[key] = to_json(kv.second, depth + 1);
      }
      return o;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (const auto& e : n) a.push_back(to_json(e, depth + 1));
      return a;
    }
    case YAML::NodeType::Scalar: return n.Scalar();
    default: return nullptr;  // Null, Undefined
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: yaml_json IN_DIR OUT_DIR FILE...\n";
    return 2;
  }
  const std::filesystem::path in = argv[1], out = argv[2];
  for (int i = 3; i < argc; ++i) {
    const std::filesystem::path file = argv[i];
    const std::filesystem::path rel = std::filesystem::relative(file, in);
    try {
      const nlohmann::ordered_json j = to_json(YAML::LoadFile(file.string()), 0);
      const std::filesystem::path dest = out / rel;
      std::filesystem::create_directories(dest.parent_path());
      const std::filesystem::path tmp = dest.string() + ".tmp";
      {
        std::ofstream f(tmp, std::ios::binary);
        f << j.dump() << "\n";
        if (!f) throw std::runtime_error("cannot write " + tmp.string());
      }
      std::filesystem::rename(tmp, dest);
    } catch (const std::exception& e) {
      std::cerr << "yaml_json: " << file.string() << ": " << e.what() << "\n";
      return 2;
    }
  }
  return 0;
}
