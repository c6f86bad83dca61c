// skrull-tokenize: text-jsonl -> token ids with a Hugging Face tokenizer, the
// same code the trainer runs on text-jsonl (ParseTextLineWithTokenizer).
//   skrull-tokenize --tokenizer PATH [--chat] [--chat-template FILE]
//                   [--template-max-bytes N] [--template-max-steps N]
//                   [--template-max-seconds S] [--input FILE] [--output FILE]
// Without --chat each line is {"text": ...} -> {"input_ids": [...]} (Hugging
// Face tokenizers' encode(text), special tokens of the post-processor
// included). With --chat each line is {"messages": [...]} -> {"input_ids":
// [...], "labels": [...]} (apply_chat_template(messages, tokenize=True);
// labels -100 except assistant content and its end-of-turn token).
// Blank lines are skipped; lines are capped at 64 MiB (kDefaultMaxLineBytes).
// The first bad line stops it: "FILE:LINE: why" on stderr, exit status 1.
// stdin / stdout by default.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "common/file_util.h"
#include "tokenizer/text_encoder.h"
#include "trainer/data/dataset.h"
#include "trainer/data/jsonl_record.h"
#include "trainer/data/line_reader.h"

namespace {

struct Flags {
  std::string tokenizer;
  bool chat = false;
  std::string chat_template_file;
  skrull::jinja::RenderLimits limits;  // spec.data.templateMax*
  std::string input = "-";
  std::string output = "-";
};

void WriteIds(const char* key, const std::vector<int32_t>& ids, std::string* out) {
  *out += '"';
  *out += key;
  *out += "\": [";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) *out += ", ";
    *out += std::to_string(ids[i]);
  }
  *out += ']';
}

// The line's kind must match --chat.
skrull::Status CheckKind(const std::string& line, bool chat) {
  const auto doc = nlohmann::json::parse(line, nullptr, false);
  if (!doc.is_object()) return skrull::OkStatus();  // the parser explains
  if (chat && doc.contains("text")) {
    return skrull::InvalidArgumentError("has \"text\" but --chat expects {\"messages\": [...]}");
  }
  if (!chat && doc.contains("messages")) {
    return skrull::InvalidArgumentError("has \"messages\"; pass --chat to encode chats");
  }
  return skrull::OkStatus();
}

int Run(const Flags& flags) {
  skrull::tokenizer::TextEncoderOptions options;
  options.path = flags.tokenizer;
  options.template_limits = flags.limits;
  if (!flags.chat_template_file.empty()) {
    auto text = skrull::ReadFileToString(flags.chat_template_file);
    if (!text.ok()) {
      std::cerr << "skrull-tokenize: " << text.status().message() << "\n";
      return 1;
    }
    options.chat_template = *text;
  }
  auto encoder = skrull::tokenizer::TextEncoder::Load(options);
  if (!encoder.ok()) {
    std::cerr << "skrull-tokenize: " << encoder.status().message() << "\n";
    return 1;
  }
  int in_fd = STDIN_FILENO;
  std::ofstream out_file;
  if (flags.input != "-") {
    in_fd = ::open(flags.input.c_str(), O_RDONLY | O_CLOEXEC);
    if (in_fd < 0) {
      std::cerr << "skrull-tokenize: " << flags.input << ": cannot open\n";
      return 1;
    }
  }
  if (flags.output != "-") {
    out_file.open(flags.output, std::ios::binary | std::ios::trunc);
    if (!out_file) {
      std::cerr << "skrull-tokenize: " << flags.output << ": cannot create\n";
      return 1;
    }
  }
  std::ostream& out = flags.output == "-" ? std::cout : out_file;
  const std::string name = flags.input == "-" ? "<stdin>" : flags.input;
  // Lines are capped like the trainer's (a file without newlines is an error).
  skrull::data::LineReader reader(in_fd, name, skrull::data::kDefaultMaxLineBytes);
  std::string_view view;
  std::string line, json;
  int64_t offset = 0, number = 0;
  skrull::data::TokenRecord record;
  while (true) {
    skrull::StatusOr<bool> more = reader.Next(&view, &offset, &number);
    if (!more.ok()) {
      std::cerr << more.status().message() << "\n";
      return 1;
    }
    if (!*more) break;
    line.assign(view);
    if (line.find_first_not_of(" \t\r\n") == std::string::npos) continue;
    skrull::Status status = CheckKind(line, flags.chat);
    if (status.ok()) {
      status = skrull::data::ParseTextLineWithTokenizer(line, **encoder, 0, &record);
    }
    if (!status.ok()) {
      std::cerr << name << ":" << number << ": " << status.message() << "\n";
      return 1;
    }
    json = "{";
    WriteIds("input_ids", record.input_ids, &json);
    if (flags.chat) {
      json += ", ";
      WriteIds("labels", record.labels, &json);
    }
    json += "}\n";
    out << json;
  }
  out.flush();
  if (!out) {
    std::cerr << "skrull-tokenize: writing " << (flags.output == "-" ? "stdout" : flags.output)
              << " failed\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"Tokenizes text-jsonl with a Hugging Face tokenizer.json (byte-level BPE)"};
  app.add_option("--tokenizer", flags.tokenizer, "tokenizer.json or a model folder")->required();
  app.add_flag("--chat", flags.chat, "lines are {\"messages\": [...]}; print labels too");
  app.add_option("--chat-template", flags.chat_template_file,
                 "a file whose text replaces the model's chat template");
  app.add_option(
         "--template-max-bytes", flags.limits.max_bytes,
         "the largest string or list a chat template may build (spec.data.templateMaxBytes)")
      ->check(CLI::PositiveNumber);
  app.add_option("--template-max-steps", flags.limits.max_steps,
                 "steps rendering one chat may take (spec.data.templateMaxSteps)")
      ->check(CLI::PositiveNumber);
  app.add_option("--template-max-seconds", flags.limits.max_seconds,
                 "seconds rendering one chat may take (spec.data.templateMaxSeconds)")
      ->check(CLI::PositiveNumber);
  app.add_option("--input", flags.input, "input JSONL (default: stdin)");
  app.add_option("--output", flags.output, "output JSONL (default: stdout)");
  CLI11_PARSE(app, argc, argv);
  return Run(flags);
}
