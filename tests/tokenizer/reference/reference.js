// The reference side of tests/tokenizer/check_tokenizer.py: Hugging Face
// tokenizers (its Rust library as the Node addon @anush008/tokenizers) and
// @huggingface/jinja (the chat-template renderer of transformers.js).
//
//   node reference.js encode NPM_DIR TOKENIZER_JSON TEXTS.jsonl
//       {"input_ids": [...]} per {"text": ...} line: encode(text) with the
//       default add_special_tokens=true.
//   node reference.js chat NPM_DIR TOKENIZER_JSON RENDERED.jsonl TEMPLATE
//       For the lines of RENDERED (render_chat.py) of TEMPLATE:
//       {"chat": i, "input_ids": [...], "labels": [...] | null} with
//       input_ids = encode(text, add_special_tokens=false) (what transformers'
//       apply_chat_template(tokenize=True) does) and labels by the rule of
//       tokenizer/chat.h from the rendered assistant spans; or {"chat": i,
//       "error": ...} when the template raised.
//   node reference.js jinja NPM_DIR TEMPLATES.json CHATS.jsonl
//       Renders like render_chat.py, with @huggingface/jinja.
'use strict';
const fs = require('fs');
const path = require('path');

const [mode, npmArg, ...rest] = process.argv.slice(2);
const npmDir = path.resolve(npmArg);
const readLines = (file) =>
  fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim().length).map((l) => JSON.parse(l));

function specialIds(tokenizerJson) {
  const doc = JSON.parse(fs.readFileSync(tokenizerJson, 'utf8'));
  return new Set((doc.added_tokens || []).filter((t) => t.special).map((t) => t.id));
}

async function encode(tokenizerJson, textsFile) {
  const {Tokenizer} = require(path.join(npmDir, 'tokenizers'));
  const tok = Tokenizer.fromFile(tokenizerJson);
  for (const line of readLines(textsFile)) {
    const e = await tok.encode(line.text, null, {addSpecialTokens: true});
    console.log(JSON.stringify({input_ids: e.getIds()}));
  }
}

async function chat(tokenizerJson, renderedFile, template) {
  const {Tokenizer} = require(path.join(npmDir, 'tokenizers'));
  const tok = Tokenizer.fromFile(tokenizerJson);
  const specials = specialIds(tokenizerJson);
  for (const r of readLines(renderedFile)) {
    if (r.template !== template) continue;
    if (r.error !== undefined) {
      console.log(JSON.stringify({chat: r.chat, error: r.error}));
      continue;
    }
    const e = await tok.encode(r.text, null, {addSpecialTokens: false});
    const ids = e.getIds();
    let labels = null;
    if (r.assistant_spans) {
      const offsets = e.getOffsets();  // code-point ranges
      const chars = Array.from(r.text);
      labels = ids.map(() => -100);
      const turn = ids.map(() => -1);
      offsets.forEach(([b, en], k) => {
        r.assistant_spans.forEach(([sb, se], s) => {
          if (turn[k] < 0 && Math.max(b, sb) < Math.min(en, se)) turn[k] = s;
        });
      });
      for (let k = 0; k < ids.length; ++k) {
        if (turn[k] < 0) continue;
        labels[k] = ids[k];
        if (k + 1 < ids.length && turn[k + 1] === turn[k]) continue;
        for (let j = k + 1; j < ids.length && turn[j] < 0; ++j) {
          if (specials.has(ids[j])) {
            labels[j] = ids[j];
            break;
          }
          const [b, en] = offsets[j];
          if (!/^[ \t\r\n]*$/.test(chars.slice(b, en).join(''))) break;
        }
      }
    }
    console.log(JSON.stringify({chat: r.chat, input_ids: ids, labels}));
  }
}

async function jinja(templatesFile, chatsFile) {
  const {Template} = await import(require('url').pathToFileURL(path.join(npmDir, 'jinja', 'dist', 'index.js')).href);
  const templates = JSON.parse(fs.readFileSync(templatesFile, 'utf8'));
  const chats = readLines(chatsFile);
  for (const [name, spec] of Object.entries(templates)) {
    let compiled = null;
    let compileError = null;
    try {
      compiled = new Template(spec.template);
    } catch (err) {
      compileError = `compile: ${err.message}`;
    }
    chats.forEach((c, i) => {
      const out = {template: name, chat: i};
      if (compileError) {
        out.error = compileError;
      } else {
        try {
          out.text = compiled.render({messages: c.messages, add_generation_prompt: false,
                                      tools: null, documents: null, ...spec.special_tokens});
        } catch (err) {
          out.error = err.message;
        }
      }
      console.log(JSON.stringify(out));
    });
  }
}

(async () => {
  if (mode === 'encode') await encode(rest[0], rest[1]);
  else if (mode === 'chat') await chat(rest[0], rest[1], rest[2]);
  else if (mode === 'jinja') await jinja(rest[0], rest[1]);
  else throw new Error(`unknown mode ${mode}`);
})().catch((err) => {
  console.error(err.stack || String(err));
  process.exit(1);
});
