// The few things that differ between the browser and Node: starting a
// worker, talking to the parent from inside one, and the core count.

/** Whether this is Node (as opposed to a browser or a browser worker). */
export const isNode: boolean =
  typeof process !== "undefined" && typeof process.versions?.node === "string";

/** A started worker, whatever the environment. */
export interface WorkerHandle {
  post(message: unknown, transfer?: Transferable[]): void;
  onMessage(listener: (message: any) => void): void;
  /** Called when the worker throws or fails to load; `error` says why. */
  onError(listener: (error: Error) => void): void;
  terminate(): void;
  /**
   * In Node, whether the worker keeps the process alive: only while the
   * runtime waits for it, so a program that forgets `dispose` still exits.
   */
  setBusy(busy: boolean): void;
}

/** Starts the ES-module worker script at `url`. */
export async function startWorker(url: URL): Promise<WorkerHandle> {
  if (isNode) {
    const { Worker } = await import("node:worker_threads");
    const worker = new Worker(url);
    return {
      post: (message, transfer) => worker.postMessage(message, transfer as any),
      onMessage: (listener) => {
        worker.on("message", listener);
        // Attaching a message listener refs the worker's port again.
        worker.unref();
      },
      setBusy: (busy) => (busy ? worker.ref() : worker.unref()),
      onError: (listener) => {
        worker.on("error", listener);
        worker.on("exit", (code) => {
          if (code !== 0) listener(new Error(`worker exited with code ${code}`));
        });
      },
      terminate: () => void worker.terminate(),
    };
  }
  const worker = new Worker(url, { type: "module" });
  return {
    post: (message, transfer) => worker.postMessage(message, transfer ?? []),
    onMessage: (listener) => worker.addEventListener("message", (event) => listener(event.data)),
    onError: (listener) => {
      worker.addEventListener("error", (event) => {
        event.preventDefault();
        listener(new Error(event.message || "worker failed to load or threw"));
      });
      worker.addEventListener("messageerror", () => listener(new Error("worker message could not be deserialised")));
    },
    terminate: () => worker.terminate(),
    setBusy: () => undefined,
  };
}

/** The worker side of `startWorker`: the channel to the parent. */
export interface ParentPort {
  post(message: unknown, transfer?: Transferable[]): void;
  onMessage(listener: (message: any) => void): void;
}

/** Inside a worker: the port to the thread that started it. */
export async function parentPort(): Promise<ParentPort> {
  if (isNode) {
    const { parentPort } = await import("node:worker_threads");
    if (!parentPort) throw new Error("argent: this script must run in a worker");
    return {
      post: (message, transfer) => parentPort.postMessage(message, transfer as any),
      onMessage: (listener) => parentPort.on("message", listener),
    };
  }
  // The DOM and WebWorker type libraries conflict, so describe the two
  // members of a dedicated worker's global scope used here.
  const scope = globalThis as unknown as {
    postMessage(message: unknown, transfer: Transferable[]): void;
    addEventListener(type: "message", listener: (event: MessageEvent) => void): void;
  };
  return {
    post: (message, transfer) => scope.postMessage(message, transfer ?? []),
    onMessage: (listener) => scope.addEventListener("message", (event) => listener(event.data)),
  };
}

/** How many cores to use by default. */
export async function defaultThreadCount(): Promise<number> {
  if (isNode) {
    const os = await import("node:os");
    return Math.max(1, os.availableParallelism?.() ?? os.cpus().length);
  }
  return Math.max(1, globalThis.navigator?.hardwareConcurrency ?? 1);
}

/**
 * Whether shared memory can be posted to workers: SharedArrayBuffer exists
 * and, in a browser, the page is cross-origin isolated.
 */
export function sharedMemoryAvailable(): boolean {
  if (typeof SharedArrayBuffer === "undefined") return false;
  if (isNode) return true;
  return (globalThis as any).crossOriginIsolated === true;
}

/**
 * Whether the engine supports Wasm SIMD128: validates a tiny module whose
 * one function returns `i32x4.splat(0)` as a v128.
 */
export function simdAvailable(): boolean {
  const probe = new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
    0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
    0x03, 0x02, 0x01, 0x00, // function 0 has type 0
    0x0a, 0x08, 0x01, 0x06, 0x00, // code: one 6-byte body, no locals
    0x41, 0x00, // i32.const 0
    0xfd, 0x11, // i32x4.splat
    0x0b, // end
  ]);
  try {
    return WebAssembly.validate(probe);
  } catch {
    return false;
  }
}
