import { readFileSync } from 'node:fs';
import path from 'node:path';

/** `npm start`'s command after its build: the environment it sets, and node's arguments (flags, then the entry). */
export interface StartCommand {
  env: Record<string, string>;
  nodeArgs: string[];
}

/**
 * Reads `scripts.start` of package.json (`VAR=value … node <flags> dist/main.js`), so the benches start the service
 * exactly as a user does: its malloc and heap settings change the figures they report.
 */
export function startCommand(root = path.join(import.meta.dirname, '..')): StartCommand {
  const script = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const words = script.trim().split(/\s+/);
  const env: Record<string, string> = {};
  while (words[0] && /^[A-Z_][A-Z0-9_]*=/.test(words[0])) {
    const [name, ...value] = words.shift()!.split('=');
    env[name!] = value.join('=');
  }
  if (words.shift() !== 'node') throw new Error(`package.json's start script should run node (got "${script}")`);
  return { env, nodeArgs: words };
}
