// Fuzz target: a chat template from an untrusted model folder
// (tokenizer/chat.h, tokenizer/jinja/), rendered with a conversation. The
// input's bytes before the first NUL are the template, the bytes after it the
// messages as JSON (a fixed conversation when there is no NUL or they do not
// parse). Any template must parse or be refused, and render or be refused,
// with an InvalidArgument naming it, within its work budget: never a crash,
// an exception or a hang. Rendering runs with smaller limits than the
// defaults (kFuzzLimits) so the fuzzer spends its time on many inputs; the
// defaults are checked by tests/tokenizer/hostile.py, which also writes the
// hostile cases of fuzz/corpus/chat_template/hostile-*.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tokenizer/chat.h"

namespace {

using skrull::Status;
using skrull::StatusCode;
namespace jinja = skrull::jinja;

constexpr char kDefaultMessages[] =
    R"([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "<think>x</think>\n\nyo"}])";

jinja::RenderLimits FuzzLimits() {
  jinja::RenderLimits limits;
  limits.max_bytes = 16 << 20;
  limits.max_steps = 1 << 21;
  limits.max_seconds = 2;
  return limits;
}

void CheckCleanError(const Status& status, const char* what) {
  if (status.ok()) return;
  SKRULL_CHECK(status.code() == StatusCode::kInvalidArgument) << what << ": " << status.ToString();
  SKRULL_CHECK(status.message().rfind("chat_template.jinja: chat template: ", 0) == 0)
      << what << " does not name the template: " << status.message();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string source(input.substr(0, nul));
  auto messages = nlohmann::ordered_json::parse(
      nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1), nullptr, false);
  if (!messages.is_array() || jinja::JsonDepthExceeds(messages, 64)) {
    messages = nlohmann::ordered_json::parse(kDefaultMessages);
  }
  jinja::ValueDict specials = {{"bos_token", jinja::Value::String("<s>")},
                               {"eos_token", jinja::Value::String("</s>")}};
  auto chat = skrull::tokenizer::ChatTemplate::Create(source, specials, "chat_template.jinja");
  if (!chat.ok()) {
    CheckCleanError(chat.status(), "parsing");
    return 0;
  }
  jinja::RenderOptions options;
  options.limits = FuzzLimits();
  options.strftime_now = [](const std::string&) { return std::string("26 Jul 2024"); };
  auto rendered = (*chat)->Render(messages, options);
  if (!rendered.ok()) {
    CheckCleanError(rendered.status(), "rendering");
    return 0;
  }
  uint32_t previous = 0;
  for (const jinja::Span& s : rendered->spans) {
    SKRULL_CHECK(s.begin >= previous && s.begin < s.end && s.end <= rendered->text.size())
        << "span [" << s.begin << ", " << s.end << ") of " << rendered->text.size() << " bytes";
    previous = s.end;
  }
  return 0;
}
