// Evaluates CRD x-kubernetes-validations rules for check_chart.py.
//   node cel_eval.mjs <dir of @marcbachmann/cel-js>  < [{rule, self}, ...]
// prints [{ok: true|false} | {error: "..."}, ...] in the same order.
// Integers arrive tagged as {"$int": "<decimal>"} and become CEL ints
// (BigInt), as the API server types integer fields; other numbers are doubles.
import {readFileSync} from 'node:fs';
import {pathToFileURL} from 'node:url';
import {join} from 'node:path';

const {parse} = await import(pathToFileURL(join(process.argv[2], 'lib', 'index.js')).href);

function toCel(v) {
  if (Array.isArray(v)) return v.map(toCel);
  if (v !== null && typeof v === 'object') {
    if (Object.keys(v).length === 1 && typeof v.$int === 'string') return BigInt(v.$int);
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toCel(x)]));
  }
  return v;
}

const requests = JSON.parse(readFileSync(0, 'utf8'));
const compiled = new Map();
const results = requests.map(({rule, self}) => {
  try {
    if (!compiled.has(rule)) compiled.set(rule, parse(rule));
    const value = compiled.get(rule)({self: toCel(self)});
    if (typeof value !== 'boolean') return {error: `rule returned ${typeof value}, not bool`};
    return {ok: value};
  } catch (e) {
    return {error: String(e.message).split('\n')[0]};
  }
});
process.stdout.write(JSON.stringify(results));
