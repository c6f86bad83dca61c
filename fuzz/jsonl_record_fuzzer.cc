// Fuzz target: one JSONL data line (trainer/data/jsonl_record.h), as the
// tokenized-jsonl and text-jsonl readers see it. Any line must end in a record
// or an InvalidArgument, never a crash. Checks the fast tokenized scanner
// against the DOM parser, the contract in jsonl_record.h: when the fast path
// accepts, the DOM accepts too, with the same ids and labels.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "trainer/data/byte_tokenizer.h"
#include "trainer/data/jsonl_record.h"

namespace {

using skrull::Status;
using skrull::StatusCode;
using skrull::data::TokenRecord;

void CheckCleanError(const Status& status) {
  if (status.ok()) return;
  SKRULL_CHECK(status.code() == StatusCode::kInvalidArgument) << status.ToString();
  SKRULL_CHECK(!status.message().empty());
}

void CheckTokenized(std::string_view line) {
  TokenRecord fast;
  const bool fast_ok = skrull::data::FastParseTokenizedLine(line, &fast);
  TokenRecord dom;
  const Status dom_status = skrull::data::DomParseTokenizedLine(line, &dom);
  CheckCleanError(dom_status);
  if (fast_ok) {
    SKRULL_CHECK(dom_status.ok()) << "fast scanner accepted a line the DOM rejects: "
                                  << dom_status.ToString();
    SKRULL_CHECK(fast.input_ids == dom.input_ids) << "input_ids differ";
    SKRULL_CHECK(fast.has_labels == dom.has_labels) << "has_labels differs";
    SKRULL_CHECK(fast.labels == dom.labels) << "labels differ";
  }
  if (dom_status.ok()) {
    CheckCleanError(skrull::data::ValidateTokenRecord(dom, 0));
    CheckCleanError(skrull::data::ValidateTokenRecord(dom, 256));
  }
  TokenRecord record;
  const Status status = skrull::data::ParseTokenizedLine(line, 1000, &record);
  CheckCleanError(status);
  SKRULL_CHECK(status.ok() ==
               (dom_status.ok() && skrull::data::ValidateTokenRecord(dom, 1000).ok()))
      << "ParseTokenizedLine disagrees with DomParseTokenizedLine + ValidateTokenRecord";
}

void CheckText(std::string_view line) {
  TokenRecord record;
  const Status status = skrull::data::ParseTextLine(line, &record);
  CheckCleanError(status);
  if (!status.ok()) return;
  SKRULL_CHECK(!record.input_ids.empty());
  for (int32_t id : record.input_ids) {
    SKRULL_CHECK(id >= 0 && id < skrull::data::kByteVocabSize) << "byte-tokenizer id " << id;
  }
  SKRULL_CHECK(!record.has_labels || record.labels.size() == record.input_ids.size())
      << record.labels.size() << " labels for " << record.input_ids.size() << " ids";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  CheckTokenized(line);
  CheckText(line);
  return 0;
}
