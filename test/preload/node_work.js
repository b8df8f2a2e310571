// node_work.js - Node.js's work under tlmalloc: 4 worker threads (each an
// isolate of its own, on its own thread) compress and expand random
// buffers with zlib and fill Maps, checking every round trip; buffers
// and zlib's state come from malloc in C.  Prints "workers 4" and, if
// libtlmalloc is in /proc/self/maps, "tlmalloc mapped".
'use strict';
const fs = require('fs');
const zlib = require('zlib');
const crypto = require('crypto');
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');

function work(seed) {
  for (let i = 0; i < 30; i++) {
    const buf = crypto.randomBytes(1 << 16);
    const back = zlib.inflateSync(zlib.deflateSync(buf, { level: 1 + i % 9 }));
    if (!back.equals(buf)) throw new Error('round trip ' + i);
    const m = new Map();
    for (let k = 0; k < 2000; k++) m.set('k' + k + '.' + seed, 'v'.repeat(k % 50));
    if (m.size !== 2000) throw new Error('map');
  }
  return 1;
}

if (isMainThread) {
  let done = 0, ended = 0;
  for (let t = 0; t < 4; t++) {
    const w = new Worker(__filename, { workerData: t });
    w.on('message', v => { done += v; });
    w.on('error', e => { console.error(e); process.exit(1); });
    w.on('exit', () => {
      if (++ended < 4) return;
      console.log('workers ' + done);
      if (fs.readFileSync('/proc/self/maps', 'utf8').includes('libtlmalloc'))
        console.log('tlmalloc mapped');
    });
  }
} else {
  parentPort.postMessage(work(workerData));
}
