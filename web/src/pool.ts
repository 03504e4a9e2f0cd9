// The execution pool: one driver plus helpers (Web Workers or
// worker_threads), started lazily. A worker that fails breaks the pool:
// everything waiting on it is rejected, the workers are terminated, and
// the next run starts a fresh pool.

import { ArgentRunError } from "./errors.js";
import { IDLE_WORKERS, Idle, idleWords } from "./layout.js";
import { startWorker, type WorkerHandle } from "./platform.js";
import type { ExecReply, ExecRequest } from "./protocol.js";

interface Waiter {
  worker: number;
  match: (reply: ExecReply) => boolean;
  resolve: (reply: ExecReply) => void;
  reject: (error: Error) => void;
}

/** A set of started execution workers. */
export class Pool {
  readonly size: number;
  private workers: WorkerHandle[] = [];
  private waiters: Waiter[] = [];
  /**
   * Per worker, the memory whose idle word it may be polling, having
   * replied to a run there (see `Idle` in layout.ts), or null.
   */
  private idleIn: (WebAssembly.Memory | null)[] = [];
  /** Set once a worker failed or the pool was terminated. */
  broken: Error | null = null;
  /** Resolves once every worker has loaded its script. */
  readonly ready: Promise<void>;

  constructor(size: number, workerUrl: URL) {
    this.size = size;
    this.ready = this.start(workerUrl);
  }

  private async start(workerUrl: URL): Promise<void> {
    const started = await Promise.all(
      Array.from({ length: this.size }, async (_, index) => {
        const worker = await startWorker(workerUrl);
        worker.onMessage((reply: ExecReply) => this.dispatch(index, reply));
        worker.onError((error) =>
          this.fail(new ArgentRunError("worker-failed", `execution worker ${index} failed: ${error.message}`)),
        );
        return worker;
      }),
    );
    this.workers = started;
    if (this.broken) {
      this.terminate();
      throw this.broken;
    }
    await Promise.all(started.map((_, index) => this.expect(index, (reply) => reply.type === "ready")));
  }

  private dispatch(worker: number, reply: ExecReply): void {
    const index = this.waiters.findIndex((waiter) => waiter.worker === worker && waiter.match(reply));
    if (index >= 0) {
      const [waiter] = this.waiters.splice(index, 1);
      waiter.resolve(reply);
      this.updateBusy();
    }
  }

  /** Waits for the next reply of `worker` that `match` accepts. */
  expect(worker: number, match: (reply: ExecReply) => boolean): Promise<ExecReply> {
    if (this.broken) return Promise.reject(this.broken);
    const reply = new Promise<ExecReply>((resolve, reject) => this.waiters.push({ worker, match, resolve, reject }));
    this.updateBusy();
    return reply;
  }

  /** Keeps the workers referenced exactly while someone waits for them. */
  private updateBusy(): void {
    const busy = this.waiters.length > 0;
    for (const worker of this.workers) worker.setBusy(busy);
  }

  /**
   * Posts `request` to `worker`, first sending it back to its event loop if
   * it may be polling for a next run (it would read the message only after
   * polling for nothing).
   */
  post(worker: number, request: ExecRequest, transfer?: Transferable[]): void {
    if (this.broken) throw this.broken;
    const memory = this.idleIn[worker];
    if (memory) {
      this.idleIn[worker] = null;
      const idle = idleWords(memory);
      if (Atomics.compareExchange(idle, worker, Idle.listening, Idle.released) === Idle.listening) {
        Atomics.notify(idle, worker);
      }
    }
    this.workers[worker].post(request, transfer);
  }

  /** `worker` replied to a run on shared `memory`: it may be polling there for the next. */
  mayListen(worker: number, memory: WebAssembly.Memory): void {
    if (worker < IDLE_WORKERS) this.idleIn[worker] = memory;
  }

  /**
   * Calls `worker` to the run described in `memory`'s control block if it
   * is still polling there; false when it is not (post it a message then).
   */
  call(worker: number, memory: WebAssembly.Memory): boolean {
    if (this.broken) throw this.broken;
    if (this.idleIn[worker] !== memory) return false;
    this.idleIn[worker] = null;
    const idle = idleWords(memory);
    if (Atomics.compareExchange(idle, worker, Idle.listening, Idle.run) !== Idle.listening) return false;
    // It may be polling or asleep on the word (see `Idle`).
    Atomics.notify(idle, worker);
    return true;
  }

  /** Marks the pool broken, rejects every waiter, and stops the workers. */
  fail(error: Error): void {
    if (this.broken) return;
    this.broken = error;
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter.reject(error);
    this.terminate();
  }

  private terminate(): void {
    for (const worker of this.workers) worker.terminate();
  }
}
