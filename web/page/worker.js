// The page's worker: loads the WebAssembly module (ridgeline.js + ridgeline.wasm) and runs one
// command line at a time off the page's thread. Messages in: {id, args, files}; out:
// {type: 'progress', id, fraction} while a search or a long simulation runs, then
// {type: 'result', id, result: {status, stdout, stderr}, ms}.
/* global createRidgeline, importScripts */
importScripts('ridgeline.js');
let current = 0;
const ready = createRidgeline({
  onProgress: (fraction) => postMessage({ type: 'progress', id: current, fraction }),
  print: () => {},
  printErr: () => {},
});
ready.then(() => postMessage({ type: 'ready' }), (e) => postMessage({ type: 'failed', error: String(e) }));

onmessage = async (e) => {
  const { id, args, files } = e.data;
  const M = await ready;
  current = id;
  for (const [path, text] of Object.entries(files || {})) {
    M.FS.mkdirTree(path.slice(0, path.lastIndexOf('/')));
    M.FS.writeFile(path, text);
  }
  const t0 = performance.now();
  const result = JSON.parse(M.ccall('ridgeline_web_run', 'string', ['string'], [JSON.stringify(args)]));
  postMessage({ type: 'result', id, result, ms: performance.now() - t0 });
};
