import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    // PGlite runs inside each worker; forks keep their WASM heaps apart.
    pool: 'forks',
    // One test file per core: vitest's default leaves one of CI's two cores idle, and most files wait on I/O part of the time.
    maxWorkers: 2,
    // Files share each worker's module graph (about 4 s of imports per file otherwise); see docs/decisions.md.
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
