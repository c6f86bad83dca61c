// Builders of small byte-level tokenizer.json documents for tests.
#ifndef SKRULL_TESTS_TOKENIZER_TOKENIZER_TEST_UTIL_H_
#define SKRULL_TESTS_TOKENIZER_TOKENIZER_TEST_UTIL_H_

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace skrull::tokenizer::testing {

// The GPT-2 / Llama-3 split pattern.
inline constexpr char kLlama3Pattern[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A byte-level BPE tokenizer: ids 0..255 are the bytes (in byte order), then
// one id per merge result in merge order; added tokens follow.
class TokenizerJsonBuilder {
 public:
  TokenizerJsonBuilder() {
    for (int b = 0; b < 256; ++b) {
      vocab_[EncodeByteLevel(std::string(1, static_cast<char>(b)))] = b;
    }
    doc_["version"] = "1.0";
    doc_["truncation"] = nullptr;
    doc_["padding"] = nullptr;
    doc_["normalizer"] = nullptr;
    doc_["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", kLlama3Pattern}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
    doc_["post_processor"] = {{"type", "ByteLevel"}};
    doc_["added_tokens"] = nlohmann::json::array();
    model_ = {{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", nullptr},
              {"byte_fallback", false},
              {"ignore_merges", false}};
  }

  // Adds merge (a, b) with raw-byte spellings; returns the new token's id.
  int Merge(const std::string& a, const std::string& b) {
    const std::string result = EncodeByteLevel(a + b);
    if (!vocab_.contains(result)) vocab_[result] = static_cast<int>(vocab_.size());
    merges_.push_back({EncodeByteLevel(a), EncodeByteLevel(b)});
    return vocab_[result].get<int>();
  }
  int Vocab(const std::string& bytes) {
    const std::string text = EncodeByteLevel(bytes);
    if (!vocab_.contains(text)) vocab_[text] = static_cast<int>(vocab_.size());
    return vocab_[text].get<int>();
  }
  int Added(const std::string& content, bool special, nlohmann::json extra = {}) {
    const int id = static_cast<int>(vocab_.size() + doc_["added_tokens"].size());
    nlohmann::json t = {{"id", id},          {"content", content}, {"single_word", false},
                        {"lstrip", false},   {"rstrip", false},    {"normalized", false},
                        {"special", special}};
    for (auto& [k, v] : extra.items()) t[k] = v;
    doc_["added_tokens"].push_back(t);
    return id;
  }
  TokenizerJsonBuilder& Set(const std::string& key, nlohmann::json value) {
    doc_[key] = std::move(value);
    return *this;
  }
  TokenizerJsonBuilder& SetModel(const std::string& key, nlohmann::json value) {
    model_[key] = std::move(value);
    return *this;
  }
  std::string Json() const {
    nlohmann::json doc = doc_;
    nlohmann::json model = model_;
    model["vocab"] = vocab_;
    model["merges"] = merges_;
    doc["model"] = model;
    return doc.dump();
  }

 private:
  nlohmann::json doc_;
  nlohmann::json model_;
  nlohmann::json vocab_ = nlohmann::json::object();
  nlohmann::json merges_ = nlohmann::json::array();
};

// The ids of `text`; a failed Encode fails the test.
inline std::vector<int32_t> EncodeIds(const Tokenizer& t, const std::string& text,
                                      bool special = false) {
  std::vector<int32_t> ids;
  Status s = t.Encode(text, special, &ids);
  EXPECT_TRUE(s.ok()) << s.message();
  return ids;
}

}  // namespace skrull::tokenizer::testing

#endif  // SKRULL_TESTS_TOKENIZER_TOKENIZER_TEST_UTIL_H_
