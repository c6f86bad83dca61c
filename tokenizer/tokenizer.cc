#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <limits>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/utf8.h"

namespace skrull::tokenizer {
namespace {

bool IsLead(unsigned char c) { return (c & 0xC0) != 0x80; }

// Maps byte offsets of a normalized text back to the original: the common
// prefix and suffix map exactly; the changed middle maps to the whole
// original middle (coarse but monotone, which is all labels need).
class Alignment {
 public:
  Alignment(std::string_view original, std::string_view normalized)
      : olen_(original.size()), nlen_(normalized.size()) {
    const size_t limit = std::min(olen_, nlen_);
    while (prefix_ < limit && original[prefix_] == normalized[prefix_]) ++prefix_;
    while (prefix_ > 0 && (prefix_ < olen_ && !IsLead(original[prefix_]))) --prefix_;
    while (suffix_ < limit - prefix_ &&
           original[olen_ - 1 - suffix_] == normalized[nlen_ - 1 - suffix_]) {
      ++suffix_;
    }
    while (suffix_ > 0 && !IsLead(original[olen_ - suffix_])) --suffix_;
  }
  size_t Begin(size_t x) const {
    if (x <= prefix_) return x;
    if (x >= nlen_ - suffix_) return olen_ - (nlen_ - x);
    return prefix_;
  }
  size_t End(size_t x) const {
    if (x <= prefix_) return x;
    if (x >= nlen_ - suffix_) return olen_ - (nlen_ - x);
    return olen_ - suffix_;
  }

 private:
  size_t olen_, nlen_;
  size_t prefix_ = 0, suffix_ = 0;
};

void PushAddedToken(const TextSplit& s, std::vector<int32_t>* ids,
                    std::vector<TokenOffsets>* offsets) {
  ids->push_back(s.id);
  if (offsets) offsets->push_back({static_cast<uint32_t>(s.begin), static_cast<uint32_t>(s.end)});
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

std::optional<int32_t> Tokenizer::TokenToId(std::string_view content) const {
  if (const AddedToken* a = added_->FindByContent(content)) return a->id;
  return bpe_->Find(content);
}

bool Tokenizer::IsSpecial(int32_t id) const {
  const AddedToken* a = added_->FindById(id);
  return a != nullptr && a->special;
}

// Pre-tokenizes and BPE-encodes a normalized segment with no added tokens;
// offsets are relative to `segment`.
Status Tokenizer::EncodePlain(std::string_view segment, std::vector<int32_t>* ids,
                              std::vector<TokenOffsets>* offsets) const {
  thread_local std::vector<Piece> pieces;
  thread_local std::string scratch;
  if (Status s = pre_tokenizer_->PreTokenize(segment, &pieces); !s.ok()) {
    return s.WithContext(origin_ + ": pre_tokenizer");
  }
  for (const Piece& p : pieces) {
    std::string_view bytes = segment.substr(p.begin, p.end - p.begin);
    if (p.space_prefix) {
      scratch.assign(1, ' ');
      scratch.append(bytes);
      bytes = scratch;
    }
    const size_t first = ids->size();
    bpe_->Encode(bytes, ids);
    if (offsets == nullptr) continue;
    // Token byte ranges inside the piece; the inserted space maps to p.begin.
    size_t at = 0;
    for (size_t k = first; k < ids->size(); ++k) {
      const size_t len = bpe_->TokenBytes((*ids)[k]);
      const size_t shift = p.space_prefix ? 1 : 0;
      const size_t b = p.begin + (at > shift ? at - shift : 0);
      const size_t e = p.begin + (at + len > shift ? at + len - shift : 0);
      offsets->push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e)});
      at += len;
    }
  }
  return OkStatus();
}

// A segment of the input with no raw added token; `base` is its offset.
Status Tokenizer::EncodeSegment(std::string_view text, size_t base, std::vector<int32_t>* ids,
                                std::vector<TokenOffsets>* offsets) const {
  std::string normalized;
  const bool changed = normalizer_->Normalize(text, &normalized);
  std::string_view norm = changed ? std::string_view(normalized) : text;
  std::vector<TextSplit> splits;
  if (Status s = added_->Split(norm, /*normalized=*/true, &splits); !s.ok()) {
    return s.WithContext(origin_ + ": added_tokens");
  }
  const size_t first = offsets ? offsets->size() : 0;
  for (const TextSplit& s : splits) {
    if (s.id >= 0) {
      PushAddedToken(s, ids, offsets);
      continue;
    }
    const size_t before = offsets ? offsets->size() : 0;
    SKRULL_RETURN_IF_ERROR(EncodePlain(norm.substr(s.begin, s.end - s.begin), ids, offsets));
    for (size_t k = before; offsets && k < offsets->size(); ++k) {
      (*offsets)[k].begin += static_cast<uint32_t>(s.begin);
      (*offsets)[k].end += static_cast<uint32_t>(s.begin);
    }
  }
  if (offsets == nullptr) return OkStatus();
  const Alignment align(text, norm);
  for (size_t k = first; k < offsets->size(); ++k) {
    TokenOffsets& o = (*offsets)[k];
    if (changed) {
      o.begin = static_cast<uint32_t>(align.Begin(o.begin));
      o.end = static_cast<uint32_t>(align.End(o.end));
    }
    o.begin += static_cast<uint32_t>(base);
    o.end += static_cast<uint32_t>(base);
  }
  return OkStatus();
}

Status Tokenizer::Encode(std::string_view text, bool add_special_tokens, std::vector<int32_t>* ids,
                         std::vector<TokenOffsets>* offsets) const {
  if (text.size() >= std::numeric_limits<uint32_t>::max()) {
    return InvalidArgumentError("text is " + std::to_string(text.size()) +
                                " bytes; the tokenizer takes texts under 4 GiB");
  }
  const size_t bad = FindInvalidUtf8(text);
  if (bad != std::string_view::npos) {
    return InvalidArgumentError("text is not valid UTF-8 (byte " + std::to_string(bad) +
                                "); the tokenizer needs UTF-8 text");
  }
  if (add_special_tokens) {
    ids->insert(ids->end(), post_->prefix.begin(), post_->prefix.end());
    if (offsets) offsets->resize(offsets->size() + post_->prefix.size(), TokenOffsets{});
  }
  std::vector<TextSplit> splits;
  if (Status s = added_->Split(text, /*normalized=*/false, &splits); !s.ok()) {
    return s.WithContext(origin_ + ": added_tokens");
  }
  for (const TextSplit& s : splits) {
    if (s.id >= 0) {
      PushAddedToken(s, ids, offsets);
      continue;
    }
    SKRULL_RETURN_IF_ERROR(
        EncodeSegment(text.substr(s.begin, s.end - s.begin), s.begin, ids, offsets));
  }
  if (add_special_tokens) {
    ids->insert(ids->end(), post_->suffix.begin(), post_->suffix.end());
    const auto end = static_cast<uint32_t>(text.size());
    if (offsets) offsets->resize(offsets->size() + post_->suffix.size(), TokenOffsets{end, end});
  }
  return OkStatus();
}

}  // namespace skrull::tokenizer
