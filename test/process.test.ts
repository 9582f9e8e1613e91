import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './helpers/free-port.js';
import { eventually } from './helpers/webhook-receiver.js';

// The real process, as `npm start` runs it: embedded database in DATA_DIR, graceful shutdown on SIGTERM.
const root = path.join(import.meta.dirname, '..');
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'storefront-process-'));
});
afterAll(async () => rm(dataDir, { recursive: true, force: true }));

interface Running {
  child: ChildProcess;
  port: number;
  logs: string[];
  exited: Promise<number | null>;
}

async function start(): Promise<Running> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', NODE_ENV: 'development' };
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  const startedAt = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  child.stdout.on('data', (d: Buffer) => logs.push(d.toString()));
  child.stderr.on('data', (d: Buffer) => logs.push(d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  while (!logs.join('').includes('storefront is ready')) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${logs.join('')}`);
    if (Date.now() - startedAt > 60_000) throw new Error(`server did not start:\n${logs.join('')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, port, logs, exited };
}

/** Waits for `done`, and on a timeout says what it waited for with the process's output so far. */
const until = (done: () => boolean, what: string, running: Running): Promise<unknown> => eventually(done, what, 30_000, () => `\n${running.logs.join('')}`);

const post = (port: number, url: string, body: unknown) =>
  fetch(`http://127.0.0.1:${port}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('the service process', () => {
  it('starts on the embedded database, keeps data across restarts, and drains in-flight requests on SIGTERM', async () => {
    const first = await start();
    const signup = await post(first.port, '/v1/auth/signup', { email: 'persist@example.com', password: 'long enough' });
    expect(signup.status).toBe(201);

    // A request still uploading its body when SIGTERM arrives is answered before the process exits. The server
    // has parsed its headers (it answered 100 Continue) before the signal, and the rest of the body is sent only
    // once the process says it is shutting down, so the test does not depend on how busy the machine is.
    const body = JSON.stringify({ email: 'persist@example.com', password: 'long enough' });
    const socket = net.connect(first.port, '127.0.0.1');
    let response = '';
    socket.on('data', (d) => (response += d.toString()));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      `POST /v1/auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n` +
        'Expect: 100-continue\r\nConnection: close\r\n\r\n',
    );
    await until(() => response.includes('100 Continue'), 'the server to read the request headers', first);
    socket.write(body.slice(0, 10));
    first.child.kill('SIGTERM');
    await until(() => first.logs.join('').includes('shutting down'), 'the process to start shutting down', first);
    socket.write(body.slice(10));
    await closed;
    expect(response).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200/);
    expect(await first.exited).toBe(0);
    expect(first.logs.join('')).toContain('shutting down');

    const second = await start();
    const login = await post(second.port, '/v1/auth/login', { email: 'persist@example.com', password: 'long enough' });
    expect(login.status).toBe(200);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 180_000);
});
