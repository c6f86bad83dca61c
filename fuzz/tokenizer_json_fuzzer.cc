// Fuzz target: a tokenizer.json from an untrusted model folder
// (tokenizer/tokenizer.h) and a text encoded with it. The input's bytes
// before the first NUL are the file, the bytes after it the text (a fixed
// text when there is no NUL). Any file must load or be refused with an
// InvalidArgument naming it, and any text must encode or be refused, in time
// and memory linear in the input: never a crash, an exception or a hang. A
// text that encodes gives ids below end_id() and offsets inside the text, in
// order. fuzz/corpus/tokenizer_json/hostile-* are the hostile files
// tests/tokenizer/hostile.py writes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace {

using skrull::Status;
using skrull::StatusCode;
using skrull::tokenizer::Tokenizer;
using skrull::tokenizer::TokenOffsets;

constexpr char kDefaultText[] =
    "Hello world's  end\n\tcafé 12345 <|im_end|> 日本語 🙂 a\u0085b";

void CheckCleanError(const Status& status, const char* what) {
  if (status.ok()) return;
  SKRULL_CHECK(status.code() == StatusCode::kInvalidArgument) << what << ": " << status.ToString();
  SKRULL_CHECK(status.message().rfind("tokenizer.json", 0) == 0)
      << what << " does not name the file: " << status.message();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view json = input.substr(0, nul);
  const std::string_view text =
      nul == std::string_view::npos ? std::string_view(kDefaultText) : input.substr(nul + 1);
  auto tokenizer = Tokenizer::FromJson(json, "tokenizer.json");
  if (!tokenizer.ok()) {
    CheckCleanError(tokenizer.status(), "loading");
    return 0;
  }
  for (bool special : {false, true}) {
    std::vector<int32_t> ids;
    std::vector<TokenOffsets> offsets;
    const Status status = (*tokenizer)->Encode(text, special, &ids, &offsets);
    if (!status.ok()) {
      // Text that is not UTF-8 is the caller's; the rest names the file.
      if (status.message().rfind("text is", 0) != 0) CheckCleanError(status, "encoding");
      continue;
    }
    SKRULL_CHECK(ids.size() == offsets.size()) << ids.size() << " ids, " << offsets.size();
    uint32_t previous = 0;
    for (size_t k = 0; k < ids.size(); ++k) {
      SKRULL_CHECK(ids[k] >= 0 && ids[k] < (*tokenizer)->end_id())
          << "id " << ids[k] << " outside [0, " << (*tokenizer)->end_id() << ")";
      SKRULL_CHECK(offsets[k].begin <= offsets[k].end && offsets[k].end <= text.size())
          << "offsets [" << offsets[k].begin << ", " << offsets[k].end << ")";
      SKRULL_CHECK(offsets[k].begin >= previous || offsets[k].begin == offsets[k].end)
          << "offsets out of order at token " << k;
      if (offsets[k].begin != offsets[k].end) previous = offsets[k].begin;
    }
  }
  return 0;
}
