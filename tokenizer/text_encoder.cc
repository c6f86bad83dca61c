#include "tokenizer/text_encoder.h"

#include <sys/stat.h>

#include <cstdio>
#include <memory>

#include <xxhash.h>

#include "common/file_util.h"

namespace skrull::tokenizer {
namespace {

// Bump when encoding changes for the same files, so cached indexes rebuild.
constexpr char kEncoderVersion[] = "skrull-text-encoder-1";

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Directory(const std::string& file) {
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? "." : file.substr(0, slash);
}

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

StatusOr<std::unique_ptr<TextEncoder>> TextEncoder::Load(const TextEncoderOptions& options) {
  std::string json_path = options.path;
  std::string dir;
  if (IsDirectory(options.path)) {
    dir = options.path;
    json_path = dir + "/tokenizer.json";
    if (!Exists(json_path)) {
      return NotFoundError(options.path +
                           ": the folder has no tokenizer.json; spec.data.tokenizer must name a "
                           "tokenizer.json or a Hugging Face model folder that has one");
    }
  } else if (!Exists(options.path)) {
    return NotFoundError(options.path + ": no such file or folder; check spec.data.tokenizer");
  } else {
    dir = Directory(options.path);
  }
  SKRULL_ASSIGN_OR_RETURN(std::string json_text, ReadFileToString(json_path));
  std::unique_ptr<TextEncoder> e(new TextEncoder());
  e->path_ = json_path;
  e->render_options_.limits = options.template_limits;
  SKRULL_ASSIGN_OR_RETURN(e->tokenizer_, Tokenizer::FromJson(json_text, json_path));

  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> state(XXH3_createState(),
                                                                        XXH3_freeState);
  XXH3_64bits_reset(state.get());
  auto hash = [&](std::string_view bytes) {
    const uint64_t n = bytes.size();
    XXH3_64bits_update(state.get(), &n, sizeof(n));
    XXH3_64bits_update(state.get(), bytes.data(), bytes.size());
  };
  hash(kEncoderVersion);
  hash(json_text);

  TokenizerConfig config;
  const std::string config_path = dir + "/tokenizer_config.json";
  if (Exists(config_path)) {
    SKRULL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(config_path));
    hash(text);
    SKRULL_ASSIGN_OR_RETURN(config, ParseTokenizerConfig(text, config_path));
    if (!config.chat_template.empty()) e->template_origin_ = config_path;
  }
  // transformers reads chat_template.jinja over the config's template.
  const std::string jinja_path = dir + "/chat_template.jinja";
  if (Exists(jinja_path)) {
    SKRULL_ASSIGN_OR_RETURN(config.chat_template, ReadFileToString(jinja_path));
    e->template_origin_ = jinja_path;
  }
  if (!options.chat_template.empty()) {
    config.chat_template = options.chat_template;
    e->template_origin_ = "spec.data.chatTemplate";
  }
  hash(config.chat_template);
  e->fingerprint_ = Hex64(XXH3_64bits_digest(state.get()));
  if (!config.chat_template.empty()) {
    SKRULL_ASSIGN_OR_RETURN(
        e->chat_, ChatTemplate::Create(config.chat_template, std::move(config.special_tokens),
                                       e->template_origin_));
  }
  return e;
}

StatusOr<EncodedRecord> TextEncoder::EncodeText(std::string_view text) const {
  EncodedRecord r;
  SKRULL_RETURN_IF_ERROR(tokenizer_->Encode(text, /*add_special_tokens=*/true, &r.input_ids));
  return r;
}

StatusOr<EncodedRecord> TextEncoder::EncodeChat(const nlohmann::ordered_json& messages) const {
  if (chat_ == nullptr) {
    return FailedPreconditionError(
        path_ +
        " has no chat template (no chat_template in tokenizer_config.json, no "
        "chat_template.jinja); set spec.data.chatTemplate to the model's template");
  }
  SKRULL_ASSIGN_OR_RETURN(jinja::TaggedString rendered, chat_->Render(messages, render_options_));
  EncodedRecord r;
  std::vector<TokenOffsets> offsets;
  SKRULL_RETURN_IF_ERROR(
      tokenizer_->Encode(rendered.text, /*add_special_tokens=*/false, &r.input_ids, &offsets));
  r.labels = ChatLabels(rendered, r.input_ids, offsets, *tokenizer_);
  return r;
}

}  // namespace skrull::tokenizer
