#!/usr/bin/env python3
"""Hostile model folders: tokenizer.json files and chat templates written to
crash, hang or exhaust the memory of whoever loads them, and the
check that Skrull refuses each cleanly, in bounded time and memory.

  hostile.py write [--corpus fuzz/corpus]
      (re)writes the cases into the fuzz corpora, as files named hostile-*:
        tokenizer_json/hostile-NAME   tokenizer.json [NUL text to encode]
        chat_template/hostile-NAME    template [NUL messages as JSON]
      (the input format of fuzz/tokenizer_json_fuzzer.cc and
      fuzz/chat_template_fuzzer.cc, which replay them in CTest).
  hostile.py check --bin BUILD/bin [--corpus fuzz/corpus] [--seconds 5] [--mib 1024]
      runs each case through `skrull-tokenize --tokenizer DIR [--chat]` (the
      trainer's code path) as a model folder (tokenizer.json, or a small valid
      tokenizer.json with the case as chat_template.jinja, and one data line),
      and checks: exit status 1, an error that names the file (and the data
      line where the case is a line), under --seconds of wall time (a case still
      running after --kill seconds is killed) and under
      --mib of peak RSS (wait4's ru_maxrss). Prints one line per case with its
      time and memory, then "N passed, M failed" (CTest: tokenizer_hostile_test).
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

# GPT-2's byte <-> unicode table (tokenizer/byte_level.cc).
def byte_level_alphabet():
    chars = {}
    nxt = 256
    for b in range(256):
        if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF:
            chars[b] = chr(b)
        else:
            chars[b] = chr(nxt)
            nxt += 1
    return chars


LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def base_tokenizer():
    """A small valid byte-level BPE tokenizer.json (ids 0..255 = bytes)."""
    alphabet = byte_level_alphabet()
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3_PATTERN}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]},
        "post_processor": {"type": "ByteLevel"},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "byte_fallback": False,
                  "ignore_merges": False,
                  "vocab": {alphabet[b]: b for b in range(256)}, "merges": []},
    }


def nested(depth, leaf, make):
    """make(make(...make(leaf))) `depth` times, built as text (json.dumps
    recurses)."""
    head, tail = make
    return head * depth + leaf + tail * depth


def tokenizer_cases():
    """name -> (tokenizer.json text, text to encode or None, expected error part)."""
    cases = {}

    def edit(fn):
        doc = base_tokenizer()
        fn(doc)
        return json.dumps(doc)

    def split(doc):
        return doc["pre_tokenizer"]["pretokenizers"][0]

    def byte_level(doc):
        return doc["pre_tokenizer"]["pretokenizers"][1]

    cases["invert-string"] = (edit(lambda d: split(d).update(invert="yes")), None,
                              "pre_tokenizer.pretokenizers[0].invert: must be true or false")
    cases["add-prefix-space-string"] = (
        edit(lambda d: byte_level(d).update(add_prefix_space="true")), None,
        "pre_tokenizer.pretokenizers[1].add_prefix_space: must be true or false")
    cases["use-regex-number"] = (edit(lambda d: byte_level(d).update(use_regex=1)), None,
                                 "use_regex: must be true or false")
    cases["behavior-number"] = (edit(lambda d: split(d).update(behavior=3)), None,
                                "behavior: must be a string")
    cases["pattern-string"] = (edit(lambda d: split(d).update(pattern="x")), None,
                               "pattern: must be an object")

    def template(ids, item=None):
        def fn(doc):
            doc["post_processor"] = {
                "type": "TemplateProcessing",
                "single": [item or {"SpecialToken": {"id": "<s>", "type_id": 0}},
                           {"Sequence": {"id": "A", "type_id": 0}}],
                "special_tokens": {"<s>": {"id": "<s>", "ids": ids, "tokens": ["<s>"]}}}
        return edit(fn)

    cases["template-item-id-number"] = (
        template([1], {"SpecialToken": {"id": 5, "type_id": 0}}), None,
        "post_processor.single[0].SpecialToken.id: must be a string")
    cases["template-id-negative"] = (template([-7]), None,
                                     "post_processor.special_tokens.<s>.ids[0]: must be a token id")
    cases["template-id-huge"] = (template([99999999999]), None,
                                 "post_processor.special_tokens.<s>.ids[0]: must be a token id")
    cases["template-id-past-vocab"] = (template([256]), None, "must be a token id in [0, 256)")
    cases["template-ids-string"] = (template("x"), None, "ids: must be an array")
    cases["vocab-id-2-30"] = (
        edit(lambda d: d["model"]["vocab"].update({"big": (1 << 30) - 1})), None,
        "model.vocab[\"big\"]: ids must be integers in [0, 1538)")
    cases["vocab-id-float"] = (edit(lambda d: d["model"]["vocab"].update({"f": 1.5})), None,
                               "ids must be integers")
    cases["added-id-2-30"] = (
        edit(lambda d: d["added_tokens"].append({"id": (1 << 30) - 2, "content": "<x>"})), None,
        "added_tokens[0].id: must be in [0, 1538)")
    cases["added-special-string"] = (
        edit(lambda d: d["added_tokens"].append({"id": 256, "content": "<x>", "special": "no"})),
        None, "added_tokens[0].special: must be true or false")
    cases["added-content-number"] = (
        edit(lambda d: d["added_tokens"].append({"id": 256, "content": 5})), None,
        "added_tokens[0].content: must be a string")
    cases["normalizer-sequence-string"] = (
        edit(lambda d: d.update(normalizer={"type": "Sequence", "normalizers": "NFC"})), None,
        "normalizer.normalizers: must be an array")
    cases["post-processor-number"] = (edit(lambda d: d.update(post_processor=7)), None,
                                      "post_processor: must be an object")
    cases["merges-object"] = (edit(lambda d: d["model"].update(merges={})), None,
                              "model.merges: must be an array")
    # Deep Sequences: a normalizer / post-processor / pre-tokenizer nested
    # 20000 levels, a decoder 1000 (the whole-file depth bound; the first two
    # overflowed the stack before), and 20 levels (the components' own bound).
    base = json.dumps(base_tokenizer())
    for field, (head, tail) in {
            "normalizer": ('{"type": "Sequence", "normalizers": [', ']}'),
            "post_processor": ('{"type": "Sequence", "processors": [', ']}'),
            "decoder": ('{"type": "Sequence", "decoders": [', ']}'),
            "pre_tokenizer": ('{"type": "Sequence", "pretokenizers": [', ']}')}.items():
        leaf = {"normalizer": '{"type": "NFC"}', "post_processor": '{"type": "ByteLevel"}',
                "decoder": '{"type": "ByteLevel"}',
                "pre_tokenizer": '{"type": "ByteLevel"}'}[field]
        key = '"%s": ' % field
        start = base.index(key) + len(key)
        value = json.loads(base)[field]
        end = start + len(json.dumps(value))
        levels = 1000 if field in ("decoder", "pre_tokenizer") else 20000
        deep = base[:start] + nested(levels, leaf, (head, tail)) + base[end:]
        cases[f"{field.replace('_', '-')}-nested-{levels}"] = (
            deep, None, "JSON nested deeper than 64 levels")
        if field != "decoder":
            shallow = base[:start] + nested(20, leaf, (head, tail)) + base[end:]
            cases[f"{field.replace('_', '-')}-nested-20"] = (
                shallow, None, "Sequences nested deeper than 16 levels")
    cases["truncated"] = (base[: len(base) * 2 // 3], None, "not a tokenizer.json")
    cases["truncated-at-end"] = (base[:-1], None, "not a tokenizer.json")
    # Encoding time: single_word with 100k matches in a line (was quadratic),
    # a long added token whose prefix repeats (the trie walk restarted at every
    # byte), lstrip with long runs, and a slow-succeeding Split regex.
    def add(content, **flags):
        return lambda d: d["added_tokens"].append(dict({"id": 256, "content": content}, **flags))

    cases["single-word-100k"] = (edit(add("x", single_word=True)), "x " * 100000, None)
    long_token = "a" * 65536 + "b"
    cases["long-added-token"] = (edit(add(long_token)), "a" * 300000, None)
    cases["lstrip-runs"] = (edit(add("<x>", lstrip=True)), (" " * 1000 + "<x>") * 300, None)
    cases["slow-regex"] = (edit(lambda d: split(d).update(pattern={"Regex": "(?:a+)+b|."})),
                           "a" * 46000, "regex")
    cases["exponential-regex-short"] = (
        edit(lambda d: split(d).update(pattern={"Regex": "(a|a)+b|."})), "a" * 40, None)
    return cases


def template_cases():
    """name -> (template, messages or None, expected error part)."""
    deep = 100000  # enough to overflow an 8 MiB stack before
    blocks = 20000  # block tags are longer; as deep in the stack
    c = {}
    # Integer arithmetic (traps before: SIGFPE).
    c["int-min-floordiv-minus-1"] = ("{{ (-9223372036854775807 - 1) // -1 }}", "integer overflow")
    c["int-min-mod-minus-1"] = ("{{ (-9223372036854775807 - 1) % -1 }}{{ raise_exception('ok') }}",
                                "raise_exception: ok")
    c["float-to-int-floordiv"] = ("{{ (1e19 | int) // -1 }}", "does not fit in a 64-bit integer")
    c["float-nan-to-int"] = ("{{ (1e308 * 10 - 1e308 * 10) | int }}", "does not fit")
    c["divisibleby-int-min"] = ("{{ (-9223372036854775807 - 1) is divisibleby(-1) }}"
                                "{{ raise_exception('ok') }}", "raise_exception: ok")
    c["abs-int-min"] = ("{{ (-9223372036854775807 - 1) | abs }}", "integer overflow")
    c["pow-huge-exponent"] = ("{{ 1 ** 9223372036854775807 }}{{ 2 ** 64 }}", "integer overflow")
    c["range-step-overflow"] = ("{{ range(9223372036854775800, 9223372036854775807, 5) | list }}"
                                "{{ raise_exception('ok') }}", "raise_exception: ok")
    c["sum-overflow"] = ("{{ [9223372036854775807, 1] | sum }}", "integer overflow")
    c["int-literal-too-big"] = ("{{ 99999999999999999999 }}", "integer literal out of range")
    # Nesting (SIGSEGV before).
    c["parentheses-100000"] = ("{{ " + "(" * deep + "1" + ")" * deep + " }}", "nested deeper")
    c["not-50000"] = ("{{ " + "not " * 50000 + "1 }}", "nested deeper")
    c["unary-minus-100000"] = ("{{ " + "-" * deep + "1 }}", "nested deeper")
    c["list-literal-100000"] = ("{{ " + "[" * deep + "]" * deep + " }}", "nested deeper")
    c["dict-literal-20000"] = ("{{ " + "{'a': " * blocks + "1" + "}" * blocks + " }}",
                               "nested deeper")
    c["if-blocks-20000"] = ("{% if true %}" * blocks + "x" + "{% endif %}" * blocks,
                            "nested deeper")
    c["for-blocks-20000"] = ("{% for i in [1] %}" * blocks + "x" + "{% endfor %}" * blocks,
                             "nested deeper")
    c["attribute-chain-100000"] = ("{{ messages" + ".a" * deep + " }}", "nested deeper")
    c["filter-chain-20000"] = ("{{ 'x'" + "|trim" * blocks + " }}", "nested deeper")
    c["plus-chain-100000"] = ("{{ 1" + "+1" * deep + " }}", "nested deeper")
    c["conditional-chain-20000"] = ("{{ 1" + " if true else 1" * blocks + " }}", "nested deeper")
    c["call-chain-100000"] = ("{{ range" + "(1)" * deep + " }}", "nested deeper")
    c["print-nested-list"] = ("{% set ns = namespace(x=[]) %}{% for i in range(100000) %}"
                              "{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}", "nested deeper")
    c["namespace-contains-itself"] = ("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}",
                                      "contains itself")
    c["namespace-chain-100000"] = (  # made by assignment: the depth is not known when built
        "{% set first = namespace(next=none) %}{% set ns = namespace(cur=first) %}"
        "{% for i in range(100000) %}{% set n = namespace(next=none) %}{% set cur = ns.cur %}"
        "{% set cur.next = n %}{% set ns.cur = n %}{% endfor %}{{ first }}", "nested deeper")
    c["namespace-built-chain-100000"] = (
        "{% set ns = namespace(head=none) %}{% for i in range(100000) %}"
        "{% set ns.head = namespace(next=ns.head) %}{% endfor %}{{ ns.head }}", "nested deeper")
    c["namespace-cycle-equals"] = ("{% set a = namespace() %}{% set b = namespace() %}"
                                   "{% set a.b = [b] %}{% set b.a = [a] %}{{ [a] == [a] }}"
                                   "{{ a | tojson }}", "nested deeper")
    c["tojson-nested"] = ("{% set ns = namespace(x=1) %}{% for i in range(100000) %}"
                          "{% set ns.x = {'a': ns.x} %}{% endfor %}{{ ns.x | tojson }}",
                          "nested deeper")
    c["macro-recursion"] = ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
                            "macro recursion deeper than 64")
    c["map-map-recursion"] = ("{{ [[1]] | map(" + "'map', " * 20000 + "'first') | list }}",
                           "is not iterable")  # each map goes one level into the value
    # Huge sizes (SIGABRT std::length_error, or memory bombs of 2-5 GB).
    c["indent-huge-width"] = ("{{ 'a\\nb' | indent(1000000000000) }}", "templateMaxBytes")
    c["indent-1e9"] = ("{{ 'a\\nb' | indent(1000000000) }}", "templateMaxBytes")
    c["indent-in-loop"] = ("{% set ns = namespace(s='a\\n' * 1000) %}{% for i in range(30) %}"
                           "{% set ns.s = ns.s | indent(1000, true) %}{% endfor %}", "spec.data.template")
    c["concat-doubling"] = ("{% set ns = namespace(s='x') %}{% for i in range(64) %}"
                            "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}", "spec.data.template")
    c["tilde-doubling"] = ("{% set ns = namespace(s='x') %}{% for i in range(64) %}"
                           "{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "spec.data.template")
    c["list-doubling"] = ("{% set ns = namespace(l=[1]) %}{% for i in range(64) %}"
                          "{% set ns.l = ns.l + ns.l %}{% endfor %}", "spec.data.template")
    c["replace-growing"] = ("{% set ns = namespace(s='xx') %}{% for i in range(64) %}"
                            "{% set ns.s = ns.s.replace('x', 'xxxx') %}{% endfor %}", "spec.data.template")
    c["replace-empty-huge"] = ("{{ ('x' * 10000000).replace('', 'yyyyyyyyyy') }}",
                               "templateMaxBytes")
    c["tojson-indent-huge"] = ("{{ [[[[1]]]] | tojson(indent=100000000) }}", "templateMaxBytes")
    c["tojson-indent-shared"] = ("{% set a = [1, 2, 3, 4, 5, 6, 7, 8] %}{% set b = [a, a, a, a] %}"
                                 "{% set c = [b, b, b, b] %}{% set d = [c, c, c, c] %}"
                                 "{% set e = [d, d, d, d] %}{% set f = [e, e, e, e] %}"
                                 "{% set g = [f, f, f, f] %}{% set h = [g, g, g, g] %}"
                                 "{% set i = [h, h, h, h] %}{% set j = [i, i, i, i] %}"
                                 "{% set k = [j, j, j, j] %}{{ k | tojson(indent=4) }}",
                                 "template")
    c["print-shared-lists"] = ("{% set a = ['x' * 1000] %}" + "".join(
        "{% set a = [a, a, a, a] %}" for _ in range(20)) + "{{ a }}", "spec.data.template")
    c["compare-shared-lists"] = ("{% set a = [1] %}" + "".join(
        "{% set a = [a, a] %}" for _ in range(60)) + "{{ a == a }}", "spec.data.template")
    c["list-filter-huge"] = ("{{ ('x' * 60000000) | list | length }}", "spec.data.template")
    c["string-mult-wraps"] = ("{{ 'ab' * 4611686018427387904 }}", "templateMaxBytes")
    c["string-mult-huge"] = ("{{ 'ab' * 1000000000 }}", "templateMaxBytes")
    # Work (no answer within the probe's limit before).
    c["loop-nested-1e8"] = ("{% for i in range(10000) %}{% for j in range(10000) %}"
                            "{% endfor %}{% endfor %}", "spec.data.template")
    c["unique-1e6"] = ("{{ range(1000000) | unique | list | length }}", "spec.data.template")
    c["sort-1e6"] = ("{{ range(1000000) | reverse | sort | first }}"
                     "{{ range(1000000) | map('string') | sort | first }}", "spec.data.template")
    c["filter-in-loop"] = ("{% set l = range(1000000) | list %}{% for i in range(1000000) %}"
                           "{{ l | length }}{% endfor %}", "spec.data.template")
    c["macro-doubling"] = ("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}"
                           "{% else %}x{% endif %}{% endmacro %}{{ f(40) }}", "spec.data.template")
    c["join-huge"] = ("{% set s = 'x' * 10000000 %}{{ range(1000000) | map('string') | join(s) }}",
                      "template")
    c["join-shared"] = ("{% set s = 'x' * 10000000 %}{% set l = [s, s, s, s, s, s, s, s] %}"
                        "{{ (l + l + l + l) | join }}", "spec.data.template")
    c["in-scan-loop"] = ("{% set s = 'x' * 10000000 %}{% for i in range(1000000) %}"
                         "{% if 'y' in s %}{% endif %}{% endfor %}", "spec.data.template")
    c["format-repeat"] = ("{{ ('{0}' * 1000000).format('x' * 1000) }}", "spec.data.template")
    c["escape-huge"] = ("{% set s = '<' * 30000000 %}{{ s | e }}", "spec.data.template")
    c["string-slice-reverse"] = ("{% set s = 'ab' * 10000000 %}{% for i in range(100) %}"
                                 "{{ s[::-1] | length }}{% endfor %}", "spec.data.template")
    c["string-index-loop"] = ("{% set s = 'x' * 10000000 %}{% for i in range(1000000) %}"
                              "{{ s[-1] }}{% endfor %}", "spec.data.template")
    c["raise-exception"] = ("{{ raise_exception('no') }}", "raise_exception: no")
    c["unterminated-block"] = ("{% for m in messages %}{{ m.content", "unterminated")
    c["select-non-string-test"] = ("{{ [1] | select(5) | list }}", "test name must be a string")
    c["map-non-string-filter"] = ("{{ [1] | map(5) | list }}", "map: give a filter name")
    c["tojson-separators-numbers"] = ("{{ [1, 2] | tojson(separators=(1, 2)) }}",
                                      "separators must be two strings")
    return {k: (v[0], None, v[1]) for k, v in c.items()}


def write(corpus):
    for sub, cases in (("tokenizer_json", tokenizer_cases()), ("chat_template", template_cases())):
        folder = os.path.join(corpus, sub)
        os.makedirs(folder, exist_ok=True)
        for name, (text, extra, _) in cases.items():
            data = text.encode("utf-8")
            if extra is not None:
                data += b"\0" + (extra if isinstance(extra, str) else json.dumps(extra)).encode()
            with open(os.path.join(folder, "hostile-" + name), "wb") as f:
                f.write(data)
    print(f"wrote {len(tokenizer_cases())} tokenizer.json and {len(template_cases())} template "
          f"cases under {corpus}")


DEFAULT_MESSAGES = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]


def write_case_folder(folder, sub, raw):
    """Writes the model folder of corpus case `raw` (from corpus folder `sub`)
    into `folder`: its tokenizer.json, or a small valid one and the case as
    chat_template.jinja. Returns (the text-jsonl data line, the file an error
    must name)."""
    head, _, tail = raw.partition(b"\0")
    if sub == "chat_template":
        with open(os.path.join(folder, "tokenizer.json"), "w") as f:
            json.dump(base_tokenizer(), f)
        with open(os.path.join(folder, "chat_template.jinja"), "wb") as f:
            f.write(head)
        messages = json.loads(tail) if tail else DEFAULT_MESSAGES
        return json.dumps({"messages": messages}), "chat_template.jinja"
    with open(os.path.join(folder, "tokenizer.json"), "wb") as f:
        f.write(head)
    return json.dumps({"text": tail.decode("utf-8") if tail else "hello world"}), "tokenizer.json"


def run_case(args, folder, chat, line):
    data = os.path.join(folder, "data.jsonl")
    with open(data, "w", encoding="utf-8") as f:
        f.write(line + "\n")
    cmd = [os.path.join(args.bin, "skrull-tokenize"), "--tokenizer", folder, "--input", data,
           "--output", os.devnull] + (["--chat"] if chat else [])
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = start + args.kill
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.005)
    seconds = time.monotonic() - start
    err = proc.stderr.read().decode("utf-8", "replace")
    code = os.waitstatus_to_exitcode(status)
    return code, err.strip(), seconds, usage.ru_maxrss / 1024.0


def check(args):
    passed = failed = 0
    corpus = args.corpus
    for sub, chat in (("tokenizer_json", False), ("chat_template", True)):
        folder = os.path.join(corpus, sub)
        names = sorted(n for n in os.listdir(folder) if n.startswith("hostile-"))
        expected = (tokenizer_cases() if sub == "tokenizer_json" else template_cases())
        for name in names:
            raw = open(os.path.join(folder, name), "rb").read()
            with tempfile.TemporaryDirectory() as tmp:
                line, origin = write_case_folder(tmp, sub, raw)
                code, err, seconds, mib = run_case(args, tmp, chat, line)
            want = expected.get(name[len("hostile-"):], (None, None, None))[2]
            problems = []
            if seconds > args.seconds:
                problems.append(f"took {seconds:.2f} s (over {args.seconds} s)")
            if mib > args.mib:
                problems.append(f"peak RSS {mib:.0f} MiB (over {args.mib} MiB)")
            if code < 0 or code > 1:
                problems.append(f"exit status {code}: {err[-300:]}")
            if code == 1:
                if origin not in err:
                    problems.append(f"error does not name {origin}: {err[:300]}")
                if want and want not in err:
                    problems.append(f"error lacks {want!r}: {err[:300]}")
            elif want:
                problems.append(f"accepted (exit {code}); expected an error with {want!r}")
            ok = not problems
            passed += ok
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {sub}/{name}: exit {code}, {seconds:.2f} s, "
                  f"{mib:.0f} MiB" + ("" if ok else " -- " + "; ".join(problems)))
            if ok and args.verbose:
                print("     " + err[:200].replace("\n", " | "))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fuzz", "corpus")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("--corpus", default=CORPUS)
    c = sub.add_parser("check")
    c.add_argument("--bin", required=True)
    c.add_argument("--corpus", default=CORPUS)
    c.add_argument("--seconds", type=float, default=5.0)
    c.add_argument("--mib", type=float, default=1024.0)
    c.add_argument("--kill", type=float, default=60.0, help="kill a case after this many s")
    c.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if args.command == "write":
        write(args.corpus)
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
