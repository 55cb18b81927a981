#!/usr/bin/env node
// `npm run web`: builds what is stale (scripts/ensure-built.mjs), then serves dist/web (the page and
// its bundle) with the cross-origin isolation headers a shared WebAssembly.Memory needs.
//   node scripts/serve-web.mjs [--port N]   (default 8080; 0 picks a free port)
// It stops on SIGINT, SIGTERM and SIGHUP, and, started by an npm script, when the process that
// started it ends: killing `npm run web` leaves no server behind (npm's shell does not pass the
// signal on, so the server watches its parent).
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join, dirname, normalize, extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuilt } from './ensure-built.mjs';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const root = join(dist, 'web');
// The library bundle itself, unchanged, so a page can `import('/wddm-fence.js')`; and the icon where a
// browser looks for one by default (the page names favicon.svg too), so no request ends in a 404.
const LIBRARY = { '/wddm-fence.js': join(dist, 'wddm-fence.js'), '/favicon.ico': join(root, 'favicon.svg') };
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.map': 'application/json', '.json': 'application/json', '.png': 'image/png', '.svg': 'image/svg+xml' };

export function startServer(port = 8080, host = '127.0.0.1') {
  const server = createServer(async (request, response) => {
    const headers = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp', 'Cross-Origin-Resource-Policy': 'same-origin', 'Cache-Control': 'no-store' };
    const url = new URL(request.url ?? '/', 'http://localhost');
    const path = normalize(decodeURIComponent(url.pathname === '/' ? '/index.html' : url.pathname));
    const file = LIBRARY[path] ?? join(root, path);
    if ((!file.startsWith(root) && !LIBRARY[path]) || request.method !== 'GET') { response.writeHead(404, headers).end('not found'); return; }
    try {
      const body = await readFile(file);
      response.writeHead(200, { ...headers, 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(body);
    } catch {
      response.writeHead(404, headers).end('not found');
    }
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try { ensureBuilt({ announce: (line) => console.error(line) }); } catch (error) { console.error(error.message ?? error); process.exit(1); }
  if (!existsSync(join(root, 'index.html'))) {
    // the npm package ships the library, the command and the docs, not the page (a 1 MB browser bundle of yaml and ajv)
    console.error('wddm-fence: the page (dist/web) is not in the npm package; run `npm install && npm run web` in a clone of the repository');
    process.exit(1);
  }
  const i = process.argv.indexOf('--port');
  const port = i > 0 ? Number(process.argv[i + 1]) : Number(process.env.PORT ?? 8080);
  const server = await startServer(port);
  console.log(`wddm-fence page: http://127.0.0.1:${server.address().port}/  (Ctrl+C stops)`);
  const stop = (why) => { console.error(`wddm-fence page: stopped (${why})`); server.close(); server.closeAllConnections(); process.exit(0); };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => stop(signal));
  if (process.env.npm_lifecycle_event) {
    const parent = process.ppid;
    setInterval(() => { if (process.ppid !== parent) stop('the npm script that started it ended'); }, 250).unref();
  }
}
