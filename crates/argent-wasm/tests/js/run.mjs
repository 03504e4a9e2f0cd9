// Test harness: `node run.mjs job1.txt job2.txt ...` runs generated
// modules on the buffers described in the job files and writes the results
// of each job to `<job file>.out`, ending with a line `end`.
//
// Job file (one directive per line, numbers in decimal, bytes in hex):
//   wasm PATH
//   threads N            (0 = unshared memory, no workers)
//   runs N               (how many times to call run; checks for leaks)
//   query 0|1            (1: call the bounds query `query` first)
//   args SIZE ERROR_OFFSET MAX_ERROR_ARGS
//   buffer OFFSET ELEM_BYTES BYTE_LEN HEX  (then `dim MIN EXTENT STRIDE` lines)
//   param OFFSET WORD
// Output lines (in <job file>.out):
//   status S
//   error_args A B ...
//   heap BEFORE AFTER_FIRST AFTER_LAST   (heap-top word around the runs)
//   pages AFTER_FIRST AFTER_LAST
//   buffer HEX           (one per buffer, final contents)
//   args_words W ...     (the argument block's words at the end)

import { readFileSync, writeFileSync } from 'node:fs';
import { ARGS_BASE, instantiate } from './runtime.mjs';

async function runJob(path) {
  const lines = readFileSync(path, 'utf8').split('\n').filter((l) => l.trim());
  const job = { buffers: [], params: [], threads: 0, runs: 1 };
  for (const line of lines) {
    const [word, ...rest] = line.trim().split(/\s+/);
    switch (word) {
      case 'wasm': job.wasm = rest[0]; break;
      case 'threads': job.threads = Number(rest[0]); break;
      case 'runs': job.runs = Number(rest[0]); break;
      case 'query': job.query = rest[0] === '1'; break;
      case 'args': [job.argsSize, job.errorOffset, job.maxErrorArgs] = rest.map(Number); break;
      case 'buffer':
        job.buffers.push({
          offset: Number(rest[0]), elemBytes: Number(rest[1]), byteLen: Number(rest[2]),
          hex: rest[3] ?? '', dims: [],
        });
        break;
      case 'dim': job.buffers[job.buffers.length - 1].dims.push(rest.map(Number)); break;
      case 'param': job.params.push({ offset: Number(rest[0]), word: Number(rest[1]) }); break;
      default: throw new Error('bad job line: ' + line);
    }
  }

  const inst = await instantiate(readFileSync(job.wasm), { threads: job.threads });
  const { memory, exports } = inst;
  const align16 = (x) => (x + 15) & ~15;
  let cursor = align16(ARGS_BASE + job.argsSize);
  const args = ARGS_BASE;
  const dv = () => new DataView(memory.buffer);
  const bases = [];
  // The buffers, then at least 64 KiB free of inputs at the end of the
  // memory, which the generated code relies on (SPECULATIVE_GUARD in
  // emit.rs).
  const bytesNeeded = job.buffers.reduce((n, b) => n + align16(b.byteLen + 64), cursor) + 65536;
  if (bytesNeeded > memory.buffer.byteLength) {
    memory.grow(Math.ceil((bytesNeeded - memory.buffer.byteLength) / 65536));
  }
  for (const b of job.buffers) {
    const base = cursor;
    bases.push(base);
    const bytes = Buffer.from(b.hex, 'hex');
    new Uint8Array(memory.buffer, base, bytes.length).set(bytes);
    dv().setInt32(args + b.offset, base, true);
    b.dims.forEach(([min, extent, stride], d) => {
      dv().setInt32(args + b.offset + 4 + 12 * d, min, true);
      dv().setInt32(args + b.offset + 8 + 12 * d, extent, true);
      dv().setInt32(args + b.offset + 12 + 12 * d, stride, true);
    });
    cursor = align16(base + b.byteLen + 64);
  }
  for (const p of job.params) dv().setInt32(args + p.offset, p.word | 0, true);
  const heapStart = cursor;
  dv().setUint32(args, heapStart, true);

  let status = 0;
  if (job.query) status = exports.query(args);
  let heapAfterFirst = 0, pagesAfterFirst = 0;
  for (let r = 0; r < job.runs; r++) {
    status = exports.run(args);
    if (r === 0) {
      heapAfterFirst = dv().getUint32(args, true);
      pagesAfterFirst = memory.buffer.byteLength / 65536;
    }
    if (status !== 0) break;
  }
  const out = [];
  out.push(`status ${status}`);
  const errs = [];
  for (let k = 0; k < job.maxErrorArgs; k++) errs.push(dv().getInt32(args + job.errorOffset + 4 * k, true));
  out.push(`error_args ${errs.join(' ')}`);
  out.push(`heap ${heapStart} ${heapAfterFirst} ${dv().getUint32(args, true)}`);
  out.push(`pages ${pagesAfterFirst} ${memory.buffer.byteLength / 65536}`);
  job.buffers.forEach((b, k) => {
    const bytes = new Uint8Array(memory.buffer, bases[k], b.byteLen);
    out.push(`buffer ${Buffer.from(bytes).toString('hex')}`);
  });
  const words = [];
  for (let k = 0; k < job.argsSize / 4; k++) words.push(dv().getInt32(args + 4 * k, true));
  out.push(`args_words ${words.join(' ')}`);
  out.push('end');
  // A file rather than stdout: large piped output can be cut short.
  writeFileSync(path + '.out', out.join('\n') + '\n');
  await inst.dispose();
}

for (const path of process.argv.slice(2)) await runJob(path);
process.exit(0);
