import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startCommand } from '../bench/start-command.js';

/**
 * Base images cannot be pulled on these machines, so the image is never built here: `npm run lint` checks the
 * Dockerfile's syntax (dockerfile-utils), and this test holds its invariants and compose.yaml's wiring.
 */
const root = path.join(import.meta.dirname, '..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const dockerfile = read('Dockerfile');
const compose = read('compose.yaml');

/** The instructions of the Dockerfile, continuation lines joined, comments dropped. */
const instructions = dockerfile
  .replace(/\\\n/g, ' ')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line && !line.startsWith('#'))
  .map((line) => ({ keyword: line.split(/\s+/)[0]!.toUpperCase(), rest: line.slice(line.split(/\s+/)[0]!.length).trim() }));
const stages = instructions.reduce<(typeof instructions)[]>((all, instruction) => {
  if (instruction.keyword === 'FROM') all.push([]);
  all.at(-1)?.push(instruction);
  return all;
}, []);
const finalStage = stages.at(-1)!;

describe('Dockerfile', () => {
  it('is multi-stage on a slim Node image, the final stage copying from the build stage', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(instructions.filter((i) => i.keyword === 'FROM').map((i) => i.rest)).toEqual(['${NODE_IMAGE} AS build', '${NODE_IMAGE} AS runtime']);
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:22[\w.-]*-slim$/m);
    expect(finalStage.filter((i) => i.keyword === 'COPY').every((i) => i.rest.startsWith('--from=build'))).toBe(true);
    expect(finalStage.some((i) => i.keyword === 'RUN' && /npm (ci|install)/.test(i.rest))).toBe(false);
  });

  it('runs as a non-root user', () => {
    const users = finalStage.filter((i) => i.keyword === 'USER').map((i) => i.rest);
    expect(users.length).toBeGreaterThan(0);
    expect(users.at(-1)).not.toMatch(/^(root|0)(:|$)/);
    const cmdIndex = finalStage.findIndex((i) => i.keyword === 'CMD');
    expect(finalStage.findIndex((i) => i.keyword === 'USER')).toBeLessThan(cmdIndex);
  });

  it('checks health on /readyz and starts the built bundle directly (no build or dev tools at start)', () => {
    const healthcheck = finalStage.find((i) => i.keyword === 'HEALTHCHECK');
    expect(healthcheck?.rest).toContain('/readyz');
    expect(healthcheck?.rest).toContain('process.env.PORT');
    const cmd = JSON.parse(finalStage.find((i) => i.keyword === 'CMD')!.rest) as string[];
    const start = startCommand(root);
    expect(cmd).toEqual(['node', ...start.nodeArgs]);
    // npm start's environment (glibc's trim threshold) is the image's too
    const env = finalStage
      .filter((i) => i.keyword === 'ENV')
      .map((i) => i.rest)
      .join(' ');
    expect(Object.keys(start.env).length).toBeGreaterThan(0);
    for (const [name, value] of Object.entries(start.env)) expect(env.split(/\s+/)).toContain(`${name}=${value}`);
  });

  it('builds with the very commands CI runs: npm ci as in .ci/run, then the build script of package.json', () => {
    const ci = read('.ci/run');
    const npmCi = /^npm ci .*$/m.exec(ci)![0].trim();
    const run = stages[0]!
      .filter((i) => i.keyword === 'RUN')
      .map((i) => i.rest)
      .join(' && ');
    const steps = run.split('&&').map((step) => step.trim());
    expect(steps[0]).toBe(npmCi);
    expect(steps).toContain('npm run build');
    expect(steps).toContain('npm prune --omit=dev --no-audit --no-fund');
    // what the runtime needs besides the bundle: migrations and seed sources are read from src/ at start
    expect(finalStage.map((i) => i.rest)).toEqual(
      expect.arrayContaining([expect.stringMatching(/\/app\/dist\/ dist\/$/), expect.stringMatching(/\/app\/src\/ src\/$/)]),
    );
  });

  it('keeps the build context small and free of local state', () => {
    const ignored = read('.dockerignore').split('\n');
    for (const entry of ['node_modules', 'dist', 'data', '.env', '.git']) expect(ignored).toContain(entry);
  });
});

describe('compose.yaml', () => {
  it('runs the service twice behind a proxy, on PostgreSQL, Redis and an S3-compatible store', () => {
    const services = [...compose.matchAll(/^ {2}([\w-]+):\s*$/gm)].map((m) => m[1]);
    expect(services).toEqual(expect.arrayContaining(['storefront-1', 'storefront-2', 'proxy', 'postgres', 'redis', 'minio', 'minio-bucket']));
    expect(compose.match(/<<: \*storefront/g)).toHaveLength(2);
    expect(compose).toMatch(/--to storefront-1:3000 --to storefront-2:3000/);
  });

  it('wires the services through variables the service reads', () => {
    const anchor = compose.slice(compose.indexOf('x-storefront:'), compose.indexOf('\nservices:'));
    const variables = [...anchor.matchAll(/^ {4}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]!);
    expect(variables).toEqual(
      expect.arrayContaining([
        'DATABASE_URL',
        'REDIS_URL',
        'S3_BUCKET',
        'S3_ENDPOINT',
        'S3_FORCE_PATH_STYLE',
        'PUBLIC_BASE_URL',
        'TRUST_PROXY',
        'METRICS_PORT',
      ]),
    );
    const config = read('src/config.ts') + read('src/platform/telemetry/settings.ts');
    for (const name of variables) expect(config, name).toContain(`'${name}'`);
    expect(anchor).toMatch(/DATABASE_URL: postgres:\/\/storefront:storefront@postgres:5432\/storefront/);
    expect(anchor).toMatch(/S3_ENDPOINT: http:\/\/minio:9000/);
    expect(compose).toMatch(/mc mb --ignore-existing local\/storefront-files/);
    expect(anchor).toMatch(/S3_BUCKET: storefront-files/);
  });

  it('has a tracing profile: a collector whose configuration exists, the instances pointed at it only when asked', () => {
    expect(compose).toMatch(/otel-collector:\n {4}profiles: \[tracing\]/);
    expect(compose).toMatch(/jaeger:\n {4}profiles: \[tracing\]/);
    expect(compose).toContain('./deploy/otel-collector.yaml:/etc/otelcol/config.yaml:ro');
    const collector = read('deploy/otel-collector.yaml');
    expect(collector).toMatch(/endpoint: 0\.0\.0\.0:4318/);
    expect(collector).toMatch(/endpoint: jaeger:4317/);
    // Empty by default: tracing is off unless the operator sets the endpoint (an empty value is off, see settings.ts).
    expect(compose).toContain('OTEL_EXPORTER_OTLP_ENDPOINT: ${OTEL_EXPORTER_OTLP_ENDPOINT:-}');
  });
});
