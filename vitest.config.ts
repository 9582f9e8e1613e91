import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    // PGlite runs inside each worker; forks keep their WASM heaps apart.
    pool: 'forks',
    // Three files at a time on CI's two cores: with two, a fifth of the CPU sat idle while files waited on child
    // processes, timers and sockets (the whole run took 28 minutes of its 30).
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
