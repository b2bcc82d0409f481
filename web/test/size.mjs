// The download of the page's engine: ridgeline.wasm and ridgeline.js compressed as a static
// host serves them (gzip -9 and brotli quality 11, node's zlib), at most 5 MB (issue 44).
// Usage: node web/test/size.mjs BUILD_WEB_DIR
import { readFileSync } from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

const dir = process.argv[2];
const LIMIT = 5e6;
const files = ['ridgeline.wasm', 'ridgeline.js'].map((f) => readFileSync(path.join(dir, f)));
const raw = files.reduce((a, b) => a + b.length, 0);
const gzip = files.reduce((a, b) => a + zlib.gzipSync(b, { level: 9 }).length, 0);
const brotli = files.reduce((a, b) => a + zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length, 0);
const mb = (n) => `${(n / 1e6).toFixed(2)} MB`;
console.log(`ridgeline.wasm + ridgeline.js: ${mb(raw)} raw, ${mb(gzip)} gzip, ${mb(brotli)} brotli (limit ${mb(LIMIT)} compressed)`);
const failed = (gzip > LIMIT ? 1 : 0) + (brotli > LIMIT ? 1 : 0);
console.log(`size: ${2 - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
