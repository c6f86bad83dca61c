#!/usr/bin/env python3
"""Renders chats the way transformers' apply_chat_template does (the reference
for skrull's chat-template interpreter).

transformers compiles chat templates with Jinja2 as below (its
_compile_jinja_template): an ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks and the loopcontrols extension, `tojson` replaced by json.dumps
with ensure_ascii=False, and the globals raise_exception and strftime_now; it
renders with messages, tools=None, documents=None, add_generation_prompt and
the tokenizer's special tokens (special_tokens_map: only those that are set).
The `generation` tag of transformers' AssistantTracker renders its body.

  render_chat.py TEMPLATES.json CHATS.jsonl > RENDERED.jsonl

TEMPLATES.json: {"name": {"template": "...", "special_tokens": {...}}, ...}
CHATS.jsonl: {"messages": [...]} per line. Output, per template and chat:
{"template": name, "chat": i, "text": "...", "assistant_spans": [[b, e], ...]}
or {..., "error": "..."}. assistant_spans are the code-point ranges of the
text that came from assistant contents, found by rendering again with each
assistant content wrapped in private-use marker characters; null when the
template changed the content so that the markers cannot tell (e.g. Qwen3's
<think> split) -- labels are then not compared.
strftime_now formats a fixed time (2025-01-02 03:04:05) so runs compare.
"""
import datetime
import json
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime.datetime(2025, 1, 2, 3, 4, 5)


class GenerationTag(Extension):
    """transformers' AssistantTracker, minus the mask bookkeeping."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def compile_template(source):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return FIXED_NOW.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


OPEN, CLOSE = "\ue000", "\ue001"


def assistant_spans(compiled, spec, messages, text):
    marked = []
    for m in messages:
        m = dict(m)
        if m.get("role") == "assistant" and isinstance(m.get("content"), str) and m["content"]:
            m["content"] = OPEN + m["content"] + CLOSE
        marked.append(m)
    try:
        rendered = compiled.render(messages=marked, tools=None, documents=None,
                                   add_generation_prompt=False, **spec.get("special_tokens", {}))
    except Exception:  # noqa: BLE001
        return None
    spans, plain, start = [], [], None
    for ch in rendered:
        if ch == OPEN:
            start = len(plain)
        elif ch == CLOSE:
            if start is None:
                return None
            spans.append([start, len(plain)])
            start = None
        else:
            plain.append(ch)
    if "".join(plain) != text or start is not None:
        return None
    return spans


def main():
    templates = json.load(open(sys.argv[1], encoding="utf-8"))
    chats = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8") if line.strip()]
    for name, spec in templates.items():
        try:
            compiled = compile_template(spec["template"])
        except Exception as e:  # noqa: BLE001 - report any compile failure
            for i in range(len(chats)):
                print(json.dumps({"template": name, "chat": i, "error": f"compile: {e}"}))
            continue
        for i, chat in enumerate(chats):
            out = {"template": name, "chat": i}
            try:
                out["text"] = compiled.render(messages=chat["messages"], tools=None, documents=None,
                                              add_generation_prompt=False,
                                              **spec.get("special_tokens", {}))
                out["assistant_spans"] = assistant_spans(compiled, spec, chat["messages"],
                                                         out["text"])
            except Exception as e:  # noqa: BLE001 - the template's own errors
                out["error"] = f"{type(e).__name__}: {e}"
            print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
