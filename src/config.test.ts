import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from './config.js';

const withTempDir = async (fn: (dir: string) => Promise<void>) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'config-test-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
};

describe('loadConfig', () => {
  it('gives the documented defaults with no configuration', () =>
    withTempDir(async (dir) => {
      const config = loadConfig({ DATA_DIR: dir });
      expect(config).toMatchObject({
        port: 3000,
        host: '0.0.0.0',
        databaseUrl: null,
        redisUrl: null,
        publicBaseUrl: 'http://localhost:3000',
        frontendUrl: 'http://localhost:3000',
        smtpUrl: null,
        rateLimitPerMinute: 300,
        allowPrivateNetwork: false,
        env: 'development',
      });
    }));

  it('generates JWT_SECRET once into DATA_DIR and reuses it', () =>
    withTempDir(async (dir) => {
      const first = loadConfig({ DATA_DIR: dir });
      const second = loadConfig({ DATA_DIR: dir });
      expect(first.jwtSecret.length).toBeGreaterThanOrEqual(32);
      expect(second.jwtSecret).toBe(first.jwtSecret);
      expect(JSON.parse(await readFile(path.join(dir, 'secrets.json'), 'utf8')).jwtSecret).toBe(first.jwtSecret);
    }));

  it('derives PUBLIC_BASE_URL from PORT and FRONTEND_URL from PUBLIC_BASE_URL', () =>
    withTempDir(async (dir) => {
      expect(loadConfig({ DATA_DIR: dir, PORT: '8080' }).publicBaseUrl).toBe('http://localhost:8080');
      const config = loadConfig({ DATA_DIR: dir, PUBLIC_BASE_URL: 'https://api.example.com/' });
      expect(config.publicBaseUrl).toBe('https://api.example.com');
      expect(config.frontendUrl).toBe('https://api.example.com');
    }));

  it('reports every invalid variable at once', () => {
    let error: unknown;
    try {
      loadConfig({
        PORT: 'eighty',
        DATABASE_URL: 'mysql://x',
        RATE_LIMIT_PER_MINUTE: '0',
        ALLOW_PRIVATE_NETWORK: 'maybe',
        ADMIN_EMAIL: 'a@example.com',
        JWT_SECRET: 'short',
        SMTP_URL: 'not a url',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const name of ['PORT', 'DATABASE_URL', 'RATE_LIMIT_PER_MINUTE', 'ALLOW_PRIVATE_NETWORK', 'ADMIN_EMAIL and ADMIN_PASSWORD', 'JWT_SECRET', 'SMTP_URL']) {
      expect(problems).toContain(name);
    }
  });

  it('accepts the scaled-mode settings', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://u@db:5432/app',
      REDIS_URL: 'redis://cache:6379',
      JWT_SECRET: 's'.repeat(40),
      NODE_ENV: 'production',
      ALLOW_PRIVATE_NETWORK: 'true',
      ADMIN_EMAIL: 'Root@Example.com',
      ADMIN_PASSWORD: 'long password',
      METRICS_TOKEN: 'a-metrics-token-of-32-characters',
    });
    expect(config).toMatchObject({ env: 'production', allowPrivateNetwork: true, adminEmail: 'root@example.com', redisUrl: 'redis://cache:6379' });
  });

  const problemsOf = (env: Record<string, string>): string[] => {
    try {
      loadConfig(env);
    } catch (err) {
      if (err instanceof ConfigError) return err.problems;
      throw err;
    }
    return [];
  };

  it("keeps the service's own variables out of the <PROVIDER>_* patterns", () =>
    withTempDir(async (dir) => {
      const config = loadConfig({ DATA_DIR: dir, SHUTDOWN_TIMEOUT_MS: '50', PUBLIC_BASE_URL: 'https://api.example.com', OPENAI_TIMEOUT_MS: '5000' });
      expect(config.shutdownTimeoutMs).toBe(50);
      expect(Object.keys(config.providers)).toEqual(['OPENAI']);
      expect(config.providers.OPENAI!.timeoutMs).toBe(5000);
    }));

  it('reports a bad PUBLIC_BASE_URL once, and a bad provider setting under its own name', () => {
    expect(problemsOf({ PUBLIC_BASE_URL: 'not a url' })).toEqual(['PUBLIC_BASE_URL must be a valid URL']);
    expect(problemsOf({ OPENAI_TIMEOUT_MS: '5' })).toEqual([expect.stringContaining('OPENAI_TIMEOUT_MS must be an integer')]);
  });

  describe('/metrics in production', () => {
    const production = { NODE_ENV: 'production', DATABASE_URL: 'postgres://u@db:5432/app', JWT_SECRET: 's'.repeat(40) };
    const METRICS_NEEDED = /^NODE_ENV=production needs METRICS_TOKEN .* or METRICS_PORT /;

    it('stops the start without METRICS_TOKEN or METRICS_PORT, naming both, among every other problem', () => {
      const problems = problemsOf({ ...production, LOG_LEVEL: 'loud' });
      expect(problems).toEqual([expect.stringContaining('LOG_LEVEL'), expect.stringMatching(METRICS_NEEDED)]);
      expect(problems[1]).toContain('METRICS_TOKEN');
      expect(problems[1]).toContain('METRICS_PORT');
    });

    it('starts with either of them (or both); outside production neither is needed', () => {
      expect(loadConfig({ ...production, METRICS_TOKEN: 't'.repeat(16) }).metrics).toEqual({ port: null, token: 't'.repeat(16) });
      expect(loadConfig({ ...production, METRICS_PORT: '9100' }).metrics).toEqual({ port: 9100, token: null });
      expect(loadConfig({ ...production, METRICS_PORT: '9100', METRICS_TOKEN: 't'.repeat(16) }).metrics).toEqual({ port: 9100, token: 't'.repeat(16) });
      expect(loadConfig({ ...production, NODE_ENV: 'development' }).metrics).toEqual({ port: null, token: null });
    });

    it('a token that is too short is reported as such, not as a missing one', () => {
      expect(problemsOf({ ...production, METRICS_TOKEN: 'short' })).toEqual(['METRICS_TOKEN must be at least 16 characters']);
      expect(problemsOf({ ...production, METRICS_PORT: 'nine' })).toEqual([expect.stringContaining('METRICS_PORT must be an integer')]);
    });
  });

  it('validates LOG_LEVEL against the logger levels, naming them', () =>
    withTempDir(async (dir) => {
      expect(problemsOf({ DATA_DIR: dir, LOG_LEVEL: 'loud' })).toEqual([
        'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
      ]);
      expect(loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'DEBUG' }).logLevel).toBe('debug');
    }));

  it('a process started with an invalid variable exits 1 with the list of problems and no stack trace', () =>
    withTempDir(async (dir) => {
      const root = path.join(import.meta.dirname, '..');
      const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
        cwd: root,
        env: { ...process.env, DATA_DIR: dir, LOG_LEVEL: 'loud', SHUTDOWN_TIMEOUT_MS: '50', PORT: '0' },
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(run.status).toBe(1);
      expect(run.stderr).toContain('Invalid configuration');
      expect(run.stderr).toContain('LOG_LEVEL must be one of');
      expect(run.stderr).not.toContain('SHUTDOWN');
      expect(run.stderr).not.toMatch(/^\s+at /m);
    }));
});
