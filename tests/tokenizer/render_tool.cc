// Test helper: renders chats with skrull's chat-template interpreter in the
// format of tests/tokenizer/reference/render_chat.py, so the two compare line
// for line (tests/tokenizer/check_tokenizer.py).
//   tokenizer_render_tool TEMPLATES.json CHATS.jsonl > RENDERED.jsonl
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "tokenizer/chat.h"

namespace {

using Json = nlohmann::ordered_json;
using skrull::jinja::Value;

std::string FixedTime(const std::string& format) {
  std::tm tm{};
  tm.tm_year = 2025 - 1900;
  tm.tm_mon = 0;
  tm.tm_mday = 2;
  tm.tm_hour = 3;
  tm.tm_min = 4;
  tm.tm_sec = 5;
  tm.tm_wday = 4;  // a Thursday
  tm.tm_yday = 1;
  char buf[256];
  return std::string(buf, std::strftime(buf, sizeof(buf), format.c_str(), &tm));
}

}  // namespace

int main(int argc, char** argv) {
  std::string templates_path, chats_path;
  CLI::App app{"Renders every chat of CHATS.jsonl with every template of TEMPLATES.json",
               "tokenizer_render_tool"};
  app.add_option("TEMPLATES.json", templates_path, "{name: {template, special_tokens}}")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("CHATS.jsonl", chats_path, "one {\"messages\": [...]} per line")
      ->required()
      ->check(CLI::ExistingFile);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  std::ifstream tf(templates_path);
  const Json templates = Json::parse(tf);
  std::vector<Json> chats;
  std::ifstream cf(chats_path);
  for (std::string line; std::getline(cf, line);) {
    if (!line.empty()) chats.push_back(Json::parse(line));
  }
  skrull::jinja::RenderOptions options;
  options.strftime_now = FixedTime;
  for (const auto& [name, spec] : templates.items()) {
    skrull::jinja::ValueDict specials;
    for (const auto& [k, v] : spec["special_tokens"].items()) {
      specials.emplace_back(k, Value::FromJson(v));
    }
    auto compiled = skrull::tokenizer::ChatTemplate::Create(spec["template"].get<std::string>(),
                                                            specials, name);
    for (size_t i = 0; i < chats.size(); ++i) {
      Json out = {{"template", name}, {"chat", i}};
      if (!compiled.ok()) {
        out["error"] = "compile: " + compiled.status().message();
      } else {
        auto text = (*compiled)->Render(chats[i]["messages"], options);
        if (text.ok()) {
          out["text"] = text->text;
        } else {
          out["error"] = text.status().message();
        }
      }
      std::cout << out.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    }
  }
  return 0;
}
