// The built-in byte tokenizer for `text-jsonl` data, and its chat template.
//
// Vocabulary: exactly 256 ids, one per byte value (kByteVocabSize). It fits the
// quickstart model (vocab_size 256). There are no extra ids: the specials are
// five ASCII control bytes that ordinary text does not contain, used as
// delimiters:
//
//   0x01 kBosId        start of a sample
//   0x02 kEosId        end of a text sample, end of every chat turn
//   0x03 kSystemId     a system turn follows
//   0x04 kUserId       a user turn follows
//   0x05 kAssistantId  an assistant turn follows
//
// Text in a sample may not contain bytes 0x01-0x05 (an error names them); every
// other byte, UTF-8 included, is its own token.
//
// Templates (labels are UNSHIFTED, Hugging Face style; see sample.h):
//   text:      BOS <text bytes> EOS
//              every token is a label.
//   messages:  BOS  ROLE <content bytes> EOS  ROLE <content bytes> EOS ...
//              ROLE is kSystemId / kUserId / kAssistantId. Only the content
//              bytes of assistant turns and the EOS closing them are labels
//              (so the model learns to answer and to stop); everything else is
//              kIgnoreIndex.
// Example: [{user: "hi"}, {assistant: "yo"}] ->
//   ids    01 04 'h' 'i' 02 05 'y' 'o' 02
//   labels -- -- --  --  -- -- 'y' 'o' 02
//
// Thread safety: pure functions.
#ifndef SKRULL_TRAINER_DATA_BYTE_TOKENIZER_H_
#define SKRULL_TRAINER_DATA_BYTE_TOKENIZER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace skrull::data {

inline constexpr int32_t kByteVocabSize = 256;
inline constexpr int32_t kBosId = 0x01;
inline constexpr int32_t kEosId = 0x02;
inline constexpr int32_t kSystemId = 0x03;
inline constexpr int32_t kUserId = 0x04;
inline constexpr int32_t kAssistantId = 0x05;

enum class ChatRole { kSystem, kUser, kAssistant };

struct ChatMessage {
  ChatRole role = ChatRole::kUser;
  std::string content;
};

// Token ids and their UNSHIFTED labels (same length).
struct EncodedText {
  std::vector<int32_t> input_ids;
  std::vector<int32_t> labels;
};

// "system" | "user" | "assistant" -> ChatRole; anything else is InvalidArgument.
StatusOr<ChatRole> ParseChatRole(std::string_view name);
const char* ChatRoleName(ChatRole role);

// OK when `text` has no reserved byte (0x01-0x05); otherwise InvalidArgument
// naming the byte and its offset. `what` names the text in the message
// ("text", "messages[2].content").
Status CheckNoReservedBytes(std::string_view text, std::string_view what);

// BOS text EOS; every token is a label. Errors as CheckNoReservedBytes.
StatusOr<EncodedText> EncodeText(std::string_view text);

// The chat template above. Errors: reserved bytes in a content (naming
// messages[i].content). An empty list encodes to just BOS.
StatusOr<EncodedText> EncodeChat(const std::vector<ChatMessage>& messages);

// Token counts of the templates, without encoding.
inline int64_t TextTokenCount(int64_t text_bytes) { return text_bytes + 2; }
inline int64_t ChatTurnTokenCount(int64_t content_bytes) { return content_bytes + 2; }
inline constexpr int64_t kChatPrefixTokens = 1;  // BOS

// Bytes back to text for logs and tests: control ids print as <|bos|>,
// <|eos|>, <|system|>, <|user|>, <|assistant|>; other ids as their byte.
// Ids outside [0, 256) print as <|id:N|>.
std::string DecodeForDisplay(const std::vector<int32_t>& ids);

}  // namespace skrull::data

#endif  // SKRULL_TRAINER_DATA_BYTE_TOKENIZER_H_
