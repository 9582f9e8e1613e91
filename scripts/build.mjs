// Bundles src/ into dist/ (dependencies stay external). Takes well under a second, so `npm start` builds every time.
// Then makes sure dist/ holds a migrated embedded database for first starts (rebuilt only when migrations change).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { build } from 'esbuild';

await build({
  entryPoints: {
    main: 'src/main.ts',
    migrate: 'scripts/migrate.ts',
    'build-snapshot': 'scripts/build-snapshot.ts',
    'import-works': 'scripts/import-works.ts',
    admin: 'scripts/admin.ts',
  },
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});

// V8 holds a script's source for as long as it runs, two bytes per character if a single one is not ASCII: esbuild
// escapes strings, but not regular expressions or comments, and one curly quote there doubles the bundle in memory.
const nonAscii = readFileSync('dist/main.js', 'utf8')
  .split('\n')
  .flatMap((line, i) => (/[\u0080-\uffff]/.test(line) ? [`  dist/main.js:${i + 1}: ${line.trim().slice(0, 120)}`] : []));
if (nonAscii.length > 0) {
  console.error(
    `dist/main.js must be ASCII-only (V8 would keep it at two bytes per character). Escape these characters (\\u2019) in the source:\n${nonAscii.join('\n')}`,
  );
  process.exit(1);
}

const snapshot = spawnSync(process.execPath, ['--enable-source-maps', 'dist/build-snapshot.js'], { stdio: 'inherit' });
if (snapshot.status !== 0) process.exit(snapshot.status ?? 1);
