// Starts e2e/mock-server.mjs on a free loopback port as a child process, for run-mock.mjs and
// test/mock-schema.test.ts: resolves once it listens, with its URL and a stop().

import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * @param {{ args?: string[], onStderr?: (chunk: string) => void }} [options] extra mock-server
 *   arguments (--port 0 is given); stderr goes to onStderr, else to this process's stderr
 * @returns {Promise<{ url: string, stop: () => void }>}
 */
export function startMock({ args = [], onStderr } = {}) {
  const child = spawn(process.execPath, [join(here, 'mock-server.mjs'), '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr.on('data', (d) => (onStderr ? onStderr(String(d)) : process.stderr.write(d)));
  const stop = () => child.kill('SIGTERM');
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`the mock server did not start within 10 s: ${out}`));
    }, 10_000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = /(http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1], stop });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the mock server exited with ${code}`));
    });
  });
}
