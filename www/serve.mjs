#!/usr/bin/env node
// A tiny static server for the demo page: serves the repository root from
// 127.0.0.1 with the headers that make the page cross-origin isolated
// (so SharedArrayBuffer and a shared WebAssembly.Memory work) and correct
// MIME types (application/wasm lets WebAssembly.compileStreaming work).
//
//   node www/serve.mjs [--port 8080]      then open http://127.0.0.1:8080/
//
// Also importable: `startServer({ port: 0 })` resolves to { url, close }.

import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

const MIME = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".map": "application/json",
  ".wasm": "application/wasm",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".ag": "text/plain; charset=utf-8",
  ".md": "text/plain; charset=utf-8",
  ".ts": "text/plain; charset=utf-8",
};

const ISOLATION_HEADERS = {
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Embedder-Policy": "require-corp",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Cache-Control": "no-store",
};

async function handle(request, response) {
  const url = new URL(request.url ?? "/", "http://localhost");
  let path = decodeURIComponent(url.pathname);
  if (path === "/") {
    response.writeHead(302, { Location: "/www/index.html", ...ISOLATION_HEADERS });
    response.end();
    return;
  }
  // Refuse anything that escapes the repository root.
  const file = normalize(join(ROOT, path));
  if (file !== ROOT && !file.startsWith(ROOT + sep)) {
    response.writeHead(403, ISOLATION_HEADERS);
    response.end("forbidden");
    return;
  }
  try {
    let target = file;
    if ((await stat(target)).isDirectory()) target = join(target, "index.html");
    const body = await readFile(target);
    response.writeHead(200, {
      "Content-Type": MIME[extname(target).toLowerCase()] ?? "application/octet-stream",
      "Content-Length": body.length,
      ...ISOLATION_HEADERS,
    });
    response.end(request.method === "HEAD" ? undefined : body);
  } catch {
    response.writeHead(404, { "Content-Type": "text/plain", ...ISOLATION_HEADERS });
    response.end(`not found: ${path}`);
  }
}

/** Starts the server on 127.0.0.1; `port: 0` picks a free port. */
export function startServer({ port = 8080 } = {}) {
  return new Promise((resolvePromise, reject) => {
    const server = createServer((request, response) => {
      handle(request, response).catch(() => {
        response.writeHead(500);
        response.end();
      });
    });
    server.on("error", reject);
    server.listen(port, "127.0.0.1", () => {
      const address = server.address();
      resolvePromise({
        url: `http://127.0.0.1:${address.port}`,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf("--port");
  const port = at > 0 ? Number(process.argv[at + 1]) : 8080;
  const { url } = await startServer({ port });
  console.log(`serving ${ROOT} at ${url}/ (cross-origin isolated)`);
}
