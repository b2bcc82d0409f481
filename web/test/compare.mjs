// The comparison both web tests make between the CLI's output and the WebAssembly module's:
// the same exit status, the same stderr, and the same JSON on stdout, less the fields that
// measure the run itself rather than compute a result (RUN_DEPENDENT, docs/web.md).
import { spawnSync } from 'node:child_process';

// Wall-clock figures of the machine that ran the command: how long the simulation or the
// search took, and the rates derived from that time. No other field is left out.
export const RUN_DEPENDENT = ['wall_s', 'elapsed_s', 'simulated_requests_per_s', 'plans_per_s'];

// `doc` without the run-dependent keys at any depth; `removed` collects the paths taken out.
export function withoutRunDependent(doc, removed = [], path = '') {
  if (Array.isArray(doc)) return doc.map((x, i) => withoutRunDependent(x, removed, `${path}/${i}`));
  if (doc && typeof doc === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(doc)) {
      if (RUN_DEPENDENT.includes(k)) removed.push(`${path}/${k}`);
      else out[k] = withoutRunDependent(v, removed, `${path}/${k}`);
    }
    return out;
  }
  return doc;
}

// Runs the native CLI: {status, stdout, stderr}.
export function runCli(bin, args) {
  const r = spawnSync(bin, args, { encoding: 'utf8', maxBuffer: 256 << 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// null when `a` (CLI) and `b` (WebAssembly) agree, else what differs. `excluded` receives the
// run-dependent paths left out. Without any, stdout must be the same bytes.
export function difference(a, b, excluded = []) {
  if (a.status !== b.status) return `exit status ${a.status} (CLI) vs ${b.status} (WebAssembly); stderr: ${a.stderr.trim()} | ${b.stderr.trim()}`;
  if (a.stderr !== b.stderr) return `stderr differs:\n  CLI:  ${a.stderr.trim()}\n  wasm: ${b.stderr.trim()}`;
  if (a.stdout === b.stdout) return null;
  let ja, jb;
  try {
    ja = JSON.parse(a.stdout);
    jb = JSON.parse(b.stdout);
  } catch {
    return 'stdout differs and is not JSON';
  }
  const ra = [], rb = [];
  const ta = JSON.stringify(withoutRunDependent(ja, ra));
  const tb = JSON.stringify(withoutRunDependent(jb, rb));
  if (ra.length === 0) return firstDifference(ja, jb, '');
  if (ta !== tb) return firstDifference(withoutRunDependent(ja), withoutRunDependent(jb), '');
  excluded.push(...ra);
  return null;
}

function firstDifference(a, b, path) {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b)) return `${path || '/'}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  if (a && typeof a === 'object') {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      const d = firstDifference(a[k], b[k], `${path}/${k}`);
      if (d) return d;
    }
    return null;
  }
  return Object.is(a, b) ? null : `${path || '/'}: ${JSON.stringify(a)} (CLI) vs ${JSON.stringify(b)} (WebAssembly)`;
}
