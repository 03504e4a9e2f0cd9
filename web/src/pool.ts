// The execution pool: one driver plus helpers (Web Workers or
// worker_threads), started lazily. A worker that fails breaks the pool:
// everything waiting on it is rejected, the workers are terminated, and
// the next run starts a fresh pool.

import { ArgentRunError } from "./errors.js";
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

  post(worker: number, request: ExecRequest, transfer?: Transferable[]): void {
    if (this.broken) throw this.broken;
    this.workers[worker].post(request, transfer);
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
