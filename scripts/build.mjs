// Bundles src/ into dist/ (dependencies stay external). Takes well under a second, so `npm start` builds every time.
import { build } from 'esbuild';

await build({
  entryPoints: { main: 'src/main.ts', migrate: 'scripts/migrate.ts' },
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});
