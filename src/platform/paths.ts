import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let cachedRoot: string | undefined;

/** The package root (the folder holding package.json), whether running from src/ or from the dist/ bundle. */
export function projectRoot(): string {
  if (cachedRoot) return cachedRoot;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('package.json not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
  cachedRoot = dir;
  return dir;
}

export const migrationsFolder = (): string => path.join(projectRoot(), 'src', 'db', 'migrations');
