// The CLI-equality test (docs/web.md): every case runs through the native CLI and through
// the WebAssembly module of build/web (under node), and the two must print the same: exit
// status, stderr and stdout — the same bytes, or where a document holds run-dependent fields
// (compare.mjs: wall-clock times), the same JSON without them.
// Usage: node web/test/equality.mjs RIDGELINE_BINARY BUILD_WEB_DIR
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { difference, runCli } from './compare.mjs';

const [bin, webDir] = process.argv.slice(2);
if (!bin || !webDir) {
  console.error('usage: node web/test/equality.mjs RIDGELINE_BINARY BUILD_WEB_DIR');
  process.exit(2);
}
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const createRidgeline = require(path.resolve(webDir, 'ridgeline.js'));
const M = await createRidgeline({ wasmBinary: readFileSync(path.resolve(webDir, 'ridgeline.wasm')), print: () => {}, printErr: () => {} });
const wasm = (args) => JSON.parse(M.ccall('ridgeline_web_run', 'string', ['string'], [JSON.stringify(args)]));

// A model's config.json given as a file: written at the same path in the module's file system.
const configPath = path.join(repo, 'data/models/qwen/qwen2.5-7b.json');
M.FS.mkdirTree(path.dirname(configPath));
M.FS.writeFile(configPath, readFileSync(configPath));

const chips = JSON.parse(runCli(bin, ['hw', 'list', '--json']).stdout).map((c) => c.name);
const cases = [
  // The catalog (converted to JSON for the module) and the bundled models, every chip whole.
  ['hw', 'list', '--json'],
  ['models', '--json'],
  ...chips.map((c) => ['hw', 'show', c, '--json']),
  // One op and its threshold (the CLI's worked example), with units read from text.
  ['op', 'matmul', '--m', '256', '--k', '4096', '--n', '4096', '--hw', 'h200', '--json'],
  ['threshold', 'matmul', '--k', '4096', '--n', '4096', '--hw', 'h200', '--solve', 'm', '--json'],
  ['op', 'attention', '--batch', '4', '--q-len', '1', '--kv-len', '8192', '--heads', '32', '--kv-heads', '8', '--head-dim', '128', '--hw', 'h100-sxm', '--mem-bw', '4.8 TB/s', '--json'],
  ['op', 'allreduce', '--bytes', '256MiB', '--chips', '8', '--hw', 'h100-sxm', '--json'],
  // Inference: the page's default, side by side, tensor and expert parallel, dtypes.
  ['infer', '--json'],
  ['infer', '--all-ops', '--json'],
  ['infer', '--model', 'llama-3.1-8b', '--hw', 'h100-sxm,h200,mi300x', '--batch', '8', '--prompt', '2048', '--gen', '256', '--all-ops', '--json'],
  ['infer', '--model', 'llama-3.1-70b', '--hw', 'h100-sxm', '--tp', '4', '--weight-dtype', 'fp8', '--kv-dtype', 'fp8', '--batch', '32', '--json'],
  ['infer', '--model', 'deepseek-v3', '--hw', 'h200', '--tp', '1', '--ep', '8', '--batch', '64', '--json'],
  ['infer', '--model', configPath, '--hw', 'a100-80gb', '--json'],
  ['block', '--json'],
  ['fuse', '--model', 'llama-3.1-8b', '--json'],
  ['advise', 'infer', '--model', 'llama-3.1-8b', '--json'],
  // Training and its search.
  ['train', '--model', 'llama-3.1-8b', '--hw', 'h100-sxm', '--gpus', '8', '--global-batch', '64', '--json'],
  ['train', '--model', 'llama-3.1-70b', '--hw', 'h100-sxm', '--gpus', '64', '--tp', '8', '--pp', '2', '--zero', '1', '--recompute', 'selective', '--global-batch', '256', '--json'],
  ['search', 'train', '--model', 'llama-3.1-8b', '--hw', 'h100-sxm', '--gpus', '8', '--global-batch', '64', '--json'],
  ['search', 'infer', '--model', 'llama-3.1-8b', '--hw', 'h100-sxm', '--json'],
  // Serving: open and closed loop, each engine, distributions of lengths, SLOs.
  ['serve', '--model', 'llama-3.1-8b', '--hw', 'h100-sxm', '--tp', '1', '--qps', '5', '--json'],
  ['serve', '--model', 'llama-3.1-8b', '--hw', 'h100-sxm', '--tp', '1', '--engine', 'sglang', '--concurrency', '16', '--requests', '300', '--json'],
  ['serve', '--model', 'llama-3.1-8b', '--hw', 'a100-80gb', '--tp', '2', '--engine', 'trtllm', '--qps', '8', '--prompt', 'uniform:512,2048', '--gen', 'lognormal:200,0.5', '--requests', '400', '--slo', 'ttft_p99=1s,tpot_p99=50ms', '--json'],
  // Capacity: the page's default search.
  ['search', 'serve', '--model', 'llama-3.1-8b', '--hw', 'h100-sxm,a100-80gb', '--qps', '5', '--requests', '200', '--max-gpus', '64', '--top', '50', '--slo', 'ttft_p99=1s,tpot_p99=50ms', '--json'],
  // ... sized for each deployment's class (--margin band: the embedded validation table).
  ['search', 'serve', '--model', 'llama-3.1-8b', '--hw', 'h100-sxm', '--qps', '5', '--requests', '200', '--max-gpus', '64', '--top', '50', '--slo', 'ttft_p99=1s,tpot_p99=50ms', '--margin', 'band', '--json'],
  // Bad input: the same one-line error and exit status 2.
  ['infer', '--model', 'no-such-model', '--json'],
  ['infer', '--batch', '0', '--json'],
  ['serve', '--qps', 'abc', '--json'],
  ['hw', 'show', 'no-such-chip', '--json'],
  ['op', 'matmul', '--m', '256', '--k', '4096', '--n', '4096', '--mem-bw', '1e400 B/s', '--json'],
  ['op', 'matmul', '--m', '256', '--k', '4096', '--n', '4096', '--mem-bw', '2.4e-324', '--json'],
  ['infer', '--mem-bw', '+3.35e12', '--json'],
  ['measure', '--json'],
];

let passed = 0, failed = 0;
const excludedAll = new Set();
for (const args of cases) {
  // measure times this machine: the module says it does not, the CLI would measure; only
  // the module's side is checked there.
  if (args[0] === 'measure') {
    const w = wasm(args);
    const ok = w.status === 2 && /runs on the machine it measures/.test(w.stderr) && w.stdout === '';
    console.log(`${ok ? 'ok  ' : 'FAIL'} ridgeline ${args.join(' ')}  (WebAssembly only: exit 2 naming why)`);
    ok ? ++passed : ++failed;
    continue;
  }
  const t0 = performance.now();
  const a = runCli(bin, args);
  const t1 = performance.now();
  const b = wasm(args);
  const t2 = performance.now();
  const excluded = [];
  const d = difference(a, b, excluded);
  excluded.forEach((e) => excludedAll.add(e.replace(/\/\d+/g, '/*')));
  const times = `CLI ${(t1 - t0).toFixed(0)} ms, WebAssembly ${(t2 - t1).toFixed(0)} ms`;
  if (d === null) {
    ++passed;
    console.log(`ok   ridgeline ${args.join(' ')}  (${times}${excluded.length ? `; left out: ${excluded.join(', ')}` : ''})`);
  } else {
    ++failed;
    console.log(`FAIL ridgeline ${args.join(' ')}  (${times})\n     ${d}`);
  }
}
console.log(`run-dependent fields left out: ${[...excludedAll].sort().join(', ') || 'none'}`);
console.log(`equality: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
