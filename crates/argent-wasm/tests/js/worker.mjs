// A pool worker: instantiates the same module against the shared memory,
// then waits for jobs (a bumped generation word) and claims iterations.

import { parentPort, workerData } from 'node:worker_threads';
import { GEN_INDEX, JOB_INDEX, SHUTDOWN_INDEX, workOn } from './runtime.mjs';

const { module, memory } = workerData;
let exports = null;
const env = {
  memory,
  // Tasks do not start parallel loops (nested loops run serially inside a
  // task), but an inline loop keeps the import total.
  parallel_for(task, closure, min, extent) {
    const fn = exports['task_' + task];
    for (let i = 0; i < extent; i++) {
      const s = fn(closure, min + i);
      if (s !== 0) return s;
    }
    return 0;
  },
};
const instance = new WebAssembly.Instance(module, { env });
exports = instance.exports;
const i32 = new Int32Array(memory.buffer);
let seen = Atomics.load(i32, GEN_INDEX);
parentPort.postMessage('ready');
for (;;) {
  Atomics.wait(i32, GEN_INDEX, seen);
  seen = Atomics.load(i32, GEN_INDEX);
  if (Atomics.load(i32, SHUTDOWN_INDEX)) break;
  // The memory may have grown: take a fresh view.
  const view = new Int32Array(memory.buffer);
  workOn(view, exports, Atomics.load(view, JOB_INDEX));
}
