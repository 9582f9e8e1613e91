// Bundles src/ into dist/ (dependencies stay external). Takes well under a second, so `npm start` builds every time.
// Then makes sure dist/ holds a migrated embedded database for first starts (rebuilt only when migrations change).
import { spawnSync } from 'node:child_process';
import { build } from 'esbuild';

await build({
  entryPoints: { main: 'src/main.ts', migrate: 'scripts/migrate.ts', 'build-snapshot': 'scripts/build-snapshot.ts', 'import-works': 'scripts/import-works.ts', admin: 'scripts/admin.ts' },
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});

const snapshot = spawnSync(process.execPath, ['--enable-source-maps', 'dist/build-snapshot.js'], { stdio: 'inherit' });
if (snapshot.status !== 0) process.exit(snapshot.status ?? 1);
