#include "trainer/data/byte_tokenizer.h"

#include <cstdio>

#include "trainer/data/sample.h"

namespace skrull::data {

namespace {

int32_t RoleId(ChatRole role) {
  switch (role) {
    case ChatRole::kSystem:
      return kSystemId;
    case ChatRole::kUser:
      return kUserId;
    case ChatRole::kAssistant:
      return kAssistantId;
  }
  return kUserId;
}

void AppendBytes(std::string_view text, bool labelled, EncodedText* out) {
  for (unsigned char c : text) {
    out->input_ids.push_back(c);
    out->labels.push_back(labelled ? static_cast<int32_t>(c) : kIgnoreIndex);
  }
}

void AppendToken(int32_t id, bool labelled, EncodedText* out) {
  out->input_ids.push_back(id);
  out->labels.push_back(labelled ? id : kIgnoreIndex);
}

}  // namespace

StatusOr<ChatRole> ParseChatRole(std::string_view name) {
  if (name == "system") return ChatRole::kSystem;
  if (name == "user") return ChatRole::kUser;
  if (name == "assistant") return ChatRole::kAssistant;
  return InvalidArgumentError("unknown role \"" + std::string(name) +
                              "\"; use one of system, user, assistant");
}

const char* ChatRoleName(ChatRole role) {
  switch (role) {
    case ChatRole::kSystem:
      return "system";
    case ChatRole::kUser:
      return "user";
    case ChatRole::kAssistant:
      return "assistant";
  }
  return "?";
}

Status CheckNoReservedBytes(std::string_view text, std::string_view what) {
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= kBosId && c <= kAssistantId) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "0x%02x", c);
      return InvalidArgumentError(std::string(what) + " has byte " + buf + " at byte offset " +
                                  std::to_string(i) +
                                  "; bytes 0x01-0x05 are reserved by the byte tokenizer's chat "
                                  "template: remove the control characters \\u0001-\\u0005");
    }
  }
  return OkStatus();
}

StatusOr<EncodedText> EncodeText(std::string_view text) {
  SKRULL_RETURN_IF_ERROR(CheckNoReservedBytes(text, "text"));
  EncodedText out;
  out.input_ids.reserve(TextTokenCount(static_cast<int64_t>(text.size())));
  out.labels.reserve(out.input_ids.capacity());
  AppendToken(kBosId, true, &out);
  AppendBytes(text, true, &out);
  AppendToken(kEosId, true, &out);
  return out;
}

StatusOr<EncodedText> EncodeChat(const std::vector<ChatMessage>& messages) {
  int64_t total = kChatPrefixTokens;
  for (size_t i = 0; i < messages.size(); ++i) {
    SKRULL_RETURN_IF_ERROR(
        CheckNoReservedBytes(messages[i].content, "messages[" + std::to_string(i) + "].content"));
    total += ChatTurnTokenCount(static_cast<int64_t>(messages[i].content.size()));
  }
  EncodedText out;
  out.input_ids.reserve(total);
  out.labels.reserve(total);
  AppendToken(kBosId, false, &out);
  for (const ChatMessage& m : messages) {
    const bool assistant = m.role == ChatRole::kAssistant;
    AppendToken(RoleId(m.role), false, &out);
    AppendBytes(m.content, assistant, &out);
    AppendToken(kEosId, assistant, &out);
  }
  return out;
}

std::string DecodeForDisplay(const std::vector<int32_t>& ids) {
  std::string out;
  out.reserve(ids.size());
  for (int32_t id : ids) {
    switch (id) {
      case kBosId:
        out += "<|bos|>";
        break;
      case kEosId:
        out += "<|eos|>";
        break;
      case kSystemId:
        out += "<|system|>";
        break;
      case kUserId:
        out += "<|user|>";
        break;
      case kAssistantId:
        out += "<|assistant|>";
        break;
      default:
        if (id >= 0 && id < kByteVocabSize) {
          out.push_back(static_cast<char>(id));
        } else {
          out += "<|id:" + std::to_string(id) + "|>";
        }
    }
  }
  return out;
}

}  // namespace skrull::data
