#pragma once
// The part of yaml-cpp's API that io/hardware_file.cpp uses, over nlohmann::json, for the
// WebAssembly build (docs/web.md): Debian has no yaml-cpp for WebAssembly, so the build
// converts the catalog's YAML files to JSON (itself YAML, flow style) with yaml-cpp natively
// (web/tools/yaml_json.cpp: every scalar kept as its text, `~` and empty values as null),
// and the one reader of the schema, parse_chip_yaml, reads that JSON through this header.
// Only JSON is read here: YAML block style is a malformed-input error naming line and column.
#include <cstddef>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>

namespace YAML {

struct Mark {
  int pos = 0, line = 0, column = 0;
};

class Exception : public std::runtime_error {
 public:
  Exception(const Mark& m, const std::string& message) : std::runtime_error(message), mark(m), msg(message) {}
  Mark mark;
  std::string msg;
};

class ParserException : public Exception {
 public:
  using Exception::Exception;
};

namespace detail {
struct iterator_value;
}

/// A node of the document: a map (JSON object), a sequence (array), a scalar (string; a JSON
/// number or boolean is its text), null, or undefined (a key or index that is not there).
class Node {
 public:
  Node() = default;

  bool IsDefined() const { return j_ != nullptr; }
  bool IsNull() const { return j_ != nullptr && j_->is_null(); }
  bool IsScalar() const { return j_ != nullptr && j_->is_primitive() && !j_->is_null(); }
  bool IsSequence() const { return j_ != nullptr && j_->is_array(); }
  bool IsMap() const { return j_ != nullptr && j_->is_object(); }
  explicit operator bool() const { return IsDefined(); }

  /// The scalar's text ("" for anything else, as yaml-cpp).
  const std::string& Scalar() const {
    if (!IsScalar()) return empty();
    if (!j_->is_string()) text_ = std::make_shared<std::string>(j_->dump());
    return j_->is_string() ? j_->get_ref<const std::string&>() : *text_;
  }

  std::size_t size() const { return IsSequence() || IsMap() ? j_->size() : 0; }

  Node operator[](const std::string& key) const {
    if (!IsMap()) return Node(doc_, nullptr);
    const auto it = j_->find(key);
    return Node(doc_, it == j_->end() ? nullptr : &*it);
  }
  Node operator[](const char* key) const { return (*this)[std::string(key)]; }
  Node operator[](std::size_t i) const { return Node(doc_, IsSequence() && i < j_->size() ? &(*j_)[i] : nullptr); }
  Node operator[](int i) const { return (*this)[static_cast<std::size_t>(i)]; }

  class const_iterator;
  const_iterator begin() const;
  const_iterator end() const;

 private:
  using Json = nlohmann::ordered_json;
  Node(std::shared_ptr<const Json> doc, const Json* j) : doc_(std::move(doc)), j_(j) {}
  static const std::string& empty() {
    static const std::string e;
    return e;
  }
  friend Node Load(const std::string& text);
  friend struct detail::iterator_value;
  std::shared_ptr<const Json> doc_;  // keeps the document alive while any node of it is
  const Json* j_ = nullptr;
  mutable std::shared_ptr<std::string> text_;
};

namespace detail {
/// What iterating gives: the element of a sequence, or a map's entry (first: key, second: value).
struct iterator_value : Node {
  Node first, second;
};
}  // namespace detail

class Node::const_iterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = detail::iterator_value;
  using difference_type = std::ptrdiff_t;
  using pointer = const value_type*;
  using reference = const value_type&;

  const_iterator(const Node* n, std::size_t i) : n_(n), i_(i) {}
  reference operator*() {
    v_ = detail::iterator_value{};
    if (n_->IsSequence()) {
      static_cast<Node&>(v_) = Node(n_->doc_, &(*n_->j_)[i_]);
    } else {
      auto it = n_->j_->items().begin();
      std::advance(it, static_cast<difference_type>(i_));
      key_ = std::make_shared<const Json>(it.key());
      v_.first = Node(key_, key_.get());
      v_.second = Node(n_->doc_, &it.value());
    }
    return v_;
  }
  pointer operator->() { return &**this; }
  const_iterator& operator++() {
    ++i_;
    return *this;
  }
  bool operator==(const const_iterator& o) const { return i_ == o.i_; }
  bool operator!=(const const_iterator& o) const { return i_ != o.i_; }

 private:
  const Node* n_;
  std::size_t i_;
  value_type v_;
  std::shared_ptr<const Json> key_;
};

inline Node::const_iterator Node::begin() const { return const_iterator(this, 0); }
inline Node::const_iterator Node::end() const { return const_iterator(this, size()); }

/// The JSON document `text`; ParserException at the line and column where it is not JSON.
inline Node Load(const std::string& text) {
  auto doc = std::make_shared<Node::Json>();
  try {
    *doc = Node::Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    Mark m;
    m.pos = static_cast<int>(e.byte > 0 ? e.byte - 1 : 0);
    for (std::size_t i = 0; i < text.size() && i < static_cast<std::size_t>(m.pos); ++i) {
      if (text[i] == '\n') ++m.line, m.column = 0;
      else ++m.column;
    }
    throw ParserException(m, "the WebAssembly build reads hardware files in JSON form (docs/web.md): not JSON here");
  }
  return Node(doc, doc.get());
}

}  // namespace YAML
