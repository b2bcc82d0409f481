// The browser test (docs/web.md): the page of build/web served on 127.0.0.1 and driven in
// Debian's headless Chromium by playwright-core (no browser downloaded): load, change
// controls, read results, check the page's JSON against the CLI for the same command, check
// that axis labels do not overlap and that nothing is wider than a phone, and take
// screenshots at 1400 px and at phone width into OUT_DIR.
// Usage: node web/test/browser.mjs BUILD_WEB_DIR OUT_DIR [RIDGELINE_BINARY]
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { difference, runCli } from './compare.mjs';

const [webDir, outDir, bin = 'build/dev/apps/ridgeline/ridgeline'] = process.argv.slice(2);
if (!webDir || !outDir) {
  console.error('usage: node web/test/browser.mjs BUILD_WEB_DIR OUT_DIR [RIDGELINE_BINARY]');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.wasm': 'application/wasm', '.json': 'application/json' };
const server = http.createServer((req, res) => {
  const p = path.join(webDir, decodeURIComponent(new URL(req.url, 'http://x').pathname).replace(/^\/+/, '') || 'index.html');
  try {
    if (!path.resolve(p).startsWith(path.resolve(webDir)) || !statSync(p).isFile()) throw new Error('no');
    res.writeHead(200, { 'Content-Type': TYPES[path.extname(p)] || 'application/octet-stream' });
    res.end(readFileSync(p));
  } catch {
    res.writeHead(404);
    res.end();
  }
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}/index.html`;

const profile = mkdtempSync(path.join(os.tmpdir(), 'ridgeline-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
  viewport: { width: 1400, height: 900 },
});

let passed = 0, failed = 0;
const results = {};
function check(name, ok, detail = '') {
  ok ? ++passed : ++failed;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`);
}
const errors = [];
async function open(width, height, hash = '') {
  const page = await context.newPage();
  await page.setViewportSize({ width, height });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(base + hash);
  return page;
}
// Waits for the tab's run counter to pass `after` (a run finished and was drawn).
async function ran(page, key, after = 0, timeout = 60000) {
  await page.waitForFunction(([k, n]) => Number(document.body.dataset[k] || 0) > n, [key, after], { timeout });
  return Number(await page.evaluate((k) => document.body.dataset[k], key));
}
const text = (page, sel) => page.$eval(sel, (e) => e.textContent);
// The page's command line and JSON against the CLI's for the same command.
async function sameAsCli(page, tab, which = 'main') {
  const cmd = (await text(page, `#source-${tab}-${which} .cmd`)).trim();
  const json = await text(page, `#source-${tab}-${which} pre.json`);
  const args = cmd.replace(/^ridgeline /, '').match(/'[^']*'|\S+/g).map((a) => a.replace(/^'|'$/g, ''));
  const excluded = [];
  const d = difference(runCli(bin, args), { status: 0, stdout: json, stderr: '' }, excluded);
  check(`${tab}${which === 'search' ? ' search' : ''}: the page's JSON is the CLI's for \`${cmd}\``, d === null, d || (excluded.length ? `left out ${excluded.join(', ')}` : 'byte-identical'));
}
// Tick labels of every chart: no two of one axis overlap, every axis has a label with a unit.
async function readableCharts(page, name) {
  const r = await page.evaluate(() => {
    const out = { overlaps: 0, charts: 0, unlabeled: 0, clipped: 0 };
    for (const svg of document.querySelectorAll('.panel:not([hidden]) svg.chart')) {
      ++out.charts;
      const boxes = [...svg.querySelectorAll('text.tick')].map((t) => t.getBoundingClientRect());
      for (let i = 0; i < boxes.length; ++i) for (let j = i + 1; j < boxes.length; ++j) {
        const a = boxes[i], b = boxes[j];
        if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) ++out.overlaps;
      }
      const frame = svg.getBoundingClientRect();
      for (const t of svg.querySelectorAll('text.axis-label, text.tick')) {
        const r = t.getBoundingClientRect();
        if (r.left < frame.left - 1 || r.right > frame.right + 1 || r.top < frame.top - 1 || r.bottom > frame.bottom + 1) ++out.clipped;
      }
      const labels = [...svg.querySelectorAll('text.axis-label')].map((t) => t.textContent);
      if (labels.length !== 2 || labels.some((l) => !/\(|fraction|requests|per /.test(l))) ++out.unlabeled;
    }
    out.overflow = document.documentElement.scrollWidth - document.documentElement.clientWidth;
    return out;
  });
  check(`${name}: ${r.charts} charts, no overlapping tick labels`, r.charts > 0 && r.overlaps === 0, `${r.overlaps} overlaps`);
  check(`${name}: every axis labelled with its unit`, r.unlabeled === 0, `${r.unlabeled} charts without`);
  check(`${name}: no label cut off at the chart's edge`, r.clipped === 0, `${r.clipped} labels`);
  check(`${name}: nothing wider than the window`, r.overflow <= 1, `${r.overflow} px too wide`);
}
const shot = async (page, name) => page.screenshot({ path: path.join(outDir, `${name}.png`), fullPage: true });

try {
  // 1400 px: the inference view from a fresh load.
  const t0 = Date.now();
  let page = await open(1400, 900);
  let n = await ran(page, 'ranInfer');
  results.first_render_ms = Number(await page.evaluate(() => document.body.dataset.firstRenderMs));
  results.load_to_result_ms = Date.now() - t0;
  check('inference: first result on screen', results.first_render_ms > 0, `${results.first_render_ms} ms after navigation`);
  const doc = JSON.parse(await text(page, '#source-infer-main pre.json'));
  const drawn = doc.ops.filter((o) => o.flops > 0 && o.bytes > 0 && o.attained_flops_per_s > 0).length;
  const points = await page.$$eval('#infer-roofline circle[fill-opacity]', (c) => c.length);
  check('inference: the roofline has a point per op with FLOPs', points === drawn && drawn > 10, `${points} points, ${drawn} such ops of ${doc.ops.length}`);
  const rows = await page.$$eval('#infer-ops tbody tr', (r) => r.length);
  check('inference: the op table has a row per op', rows === doc.ops.length, `${rows} rows`);
  const box = await (await page.$$('#infer-roofline circle[fill-opacity]'))[5].boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const tip = await page.$eval('.chart-tip', (e) => (getComputedStyle(e).display !== 'none' ? e.textContent : ''));
  check('inference: hovering a point names the op, its FLOPs, bytes, bound and share', /FLOPs:.*bytes:.*bound:.*share of/.test(tip), tip.slice(0, 80));
  await sameAsCli(page, 'infer');
  await shot(page, 'infer-1400');

  // Controls: the batch moves the result, the URL and the command.
  const ttft0 = doc.ttft_s;
  await page.fill('#infer-batch', '32');
  n = await ran(page, 'ranInfer', n);
  results.infer_update_ms = Number(await page.evaluate(() => document.body.dataset.updateMs));
  const doc32 = JSON.parse(await text(page, '#source-infer-main pre.json'));
  check('inference: batch 32 reaches the engine', doc32.batch === 32 && doc32.ttft_s > ttft0, `TTFT ${ttft0} -> ${doc32.ttft_s} s`);
  check('inference: the URL holds the state', page.url().includes('batch=32'), page.url().replace(/^.*#/, '#'));
  check('inference: the command shows the flag', (await text(page, '#source-infer-main .cmd')).includes('--batch 32'));
  // Quick changes, one after another: the last one is what the page ends on.
  for (const v of ['8', '16', '64', '32']) await page.fill('#infer-batch', v);
  await page.waitForFunction(() => JSON.parse(document.querySelector('#source-infer-main pre.json').textContent).batch === 32 &&
    !document.querySelector('#out-infer').classList.contains('stale'), null, { timeout: 30000 });
  n = Number(await page.evaluate(() => document.body.dataset.ranInfer));
  check('inference: after quick changes the page shows the last', (await text(page, '#source-infer-main .cmd')).includes('--batch 32'));
  // A second and third chip: side by side.
  await page.selectOption('#infer-hw select[data-index="1"]', 'h200');
  n = await ran(page, 'ranInfer', n);
  await page.selectOption('#infer-hw select[data-index="2"]', 'mi300x');
  n = await ran(page, 'ranInfer', n);
  const heads = await page.$$eval('#infer-compare th', (t) => t.map((x) => x.textContent));
  check('inference: three chips side by side', heads.join('|') === '|h100-sxm|h200|mi300x', heads.join('|'));
  await sameAsCli(page, 'infer');
  await readableCharts(page, 'inference 1400 px');
  await shot(page, 'infer-compare-1400');
  // The README's picture: the first screen of this view (docs/img/web-page.png).
  await page.mouse.move(0, 0);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(outDir, 'readme-1400.png') });
  // The link opens the same view.
  const link = page.url();
  const again = await open(1400, 900, link.slice(link.indexOf('#')));
  await ran(again, 'ranInfer');
  check('inference: a shared link opens the same view', (await text(again, '#source-infer-main .cmd')) === (await text(page, '#source-infer-main .cmd')) &&
    (await again.inputValue('#infer-batch')) === '32');
  await again.close();

  // Serving: a simulation in the worker.
  await page.click('#tab-serve');
  await ran(page, 'ranServe', 0, 120000);
  const srows = await page.$$eval('#serve-percentiles tbody tr', (r) => r.length);
  check('serving: percentiles of TTFT, TPOT, ITL, end to end and queueing', srows === 5, `${srows} rows`);
  await sameAsCli(page, 'serve');
  await readableCharts(page, 'serving 1400 px');
  await shot(page, 'serve-1400');
  // A release's preset from the engine list (TensorRT-LLM's engine flow of 0.9-0.15).
  const ns = Number(await page.evaluate(() => document.body.dataset.ranServe));
  await page.selectOption('#serve-engine', 'trtllm@0.15');
  await ran(page, 'ranServe', ns, 120000);
  const sdoc = JSON.parse(await text(page, '#source-serve-main pre.json'));
  check('serving: a release\'s preset reaches the engine', sdoc.engine.name === 'trtllm@0.15', sdoc.engine.name);
  await sameAsCli(page, 'serve');

  // Capacity: search serve with its progress.
  await page.click('#tab-capacity');
  const tc = Date.now();
  await ran(page, 'ranCapacity', 0, 300000);
  results.capacity_search_ms = Date.now() - tc;
  const reports = Number(await page.evaluate(() => document.body.dataset.progressReports || 0));
  check('capacity: the search reports its progress to the page', reports >= 1, `${reports} reports`);
  const best = await page.$$eval('#capacity-per-chip tbody tr', (r) => r.map((x) => [...x.cells].map((c) => c.textContent)));
  check('capacity: a best deployment per chip', best.length === 2 && best.every((r) => /^\d+$/.test(r[4])), best.map((r) => `${r[0]}: ${r[4]} GPUs`).join(', '));
  await sameAsCli(page, 'capacity');
  await readableCharts(page, 'capacity 1400 px');
  await shot(page, 'capacity-1400');

  // Training, then search train.
  await page.click('#tab-train');
  let nt = await ran(page, 'ranTrain');
  await page.selectOption('#train-tp', '2');
  nt = await ran(page, 'ranTrain', nt);
  results.train_update_ms = Number(await page.evaluate(() => document.body.dataset.updateMs));
  check('training: TP 2 reaches the engine', JSON.parse(await text(page, '#source-train-main pre.json')).tp === 2);
  await sameAsCli(page, 'train');
  await page.click('#train-search');
  await ran(page, 'ranTrainSearch', 0, 120000);
  const plans = await page.$$eval('#train-search-table tbody tr', (r) => r.length);
  check('training: search train lists its best plans', plans >= 1, `${plans} plans`);
  await sameAsCli(page, 'train', 'search');
  await shot(page, 'train-1400');
  await page.close();

  // A model of one's own: a config.json pasted into the page.
  {
    const p = await open(1400, 900, '#infer');
    let k = await ran(p, 'ranInfer');
    await p.selectOption('#infer-model', 'custom');
    const cfg = readFileSync(path.resolve(webDir, '../../data/models/qwen/qwen2.5-7b.json'), 'utf8');
    await p.fill('#infer-config', cfg);
    k = await ran(p, 'ranInfer', k);
    const j = JSON.parse(await text(p, '#source-infer-main pre.json'));
    const cli = JSON.parse(runCli(bin, ['infer', '--model', path.resolve(webDir, '../../data/models/qwen/qwen2.5-7b.json'), '--json']).stdout);
    check('a pasted config.json: the same figures as the CLI reading the file', j.params === cli.params && j.ttft_s === cli.ttft_s && j.tpot_s === cli.tpot_s,
      `${j.params} params, TTFT ${j.ttft_s} s`);
    check('a pasted config.json: the command names it', (await text(p, '#source-infer-main .cmd')).includes('--model config.json'));
    await p.close();
  }

  // Opened from a file: no worker, no fetch of the .wasm; the module runs on the page's thread.
  {
    const p = await context.newPage();
    p.on('pageerror', (e) => errors.push(`file://: ${e}`));
    await p.goto('file://' + path.resolve(webDir, 'index.html') + '#infer&batch=4');
    await ran(p, 'ranInfer');
    const j = JSON.parse(await text(p, '#source-infer-main pre.json'));
    check('opened from a file (file://): the inference result', j.batch === 4, `batch ${j.batch}`);
    await p.close();
  }

  // Phone width: every tab readable, nothing wider than the screen.
  for (const tab of ['infer', 'serve', 'capacity', 'train']) {
    const p = await open(390, 844, `#${tab}`);
    await ran(p, `ran${tab[0].toUpperCase()}${tab.slice(1)}`, 0, 300000);
    if (tab !== 'train') await readableCharts(p, `${tab} at 390 px`);
    else check('train at 390 px: nothing wider than the window', (await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)) <= 1);
    await shot(p, `${tab}-phone`);
    await p.close();
  }
  check('no errors in the console', errors.length === 0, errors.slice(0, 3).join(' | '));
} catch (e) {
  check('the test ran to its end', false, String(e).split('\n')[0]);
} finally {
  await context.close();
  server.close();
  rmSync(profile, { recursive: true, force: true });
}
writeFileSync(path.join(outDir, 'timings.json'), JSON.stringify(results, null, 2) + '\n');
console.log(`timings: ${JSON.stringify(results)}`);
console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
