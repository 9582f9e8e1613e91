import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';

/**
 * The embedded database runs inside the process that opens it, so two processes on the same directory (the server and
 * `npm run admin`, or two servers) would each write its files with their own buffers and corrupt it. The first one
 * takes `<dataDir>.lock` holding its pid; another is refused while that process lives, and a lock whose process is
 * gone (killed) is taken over.
 */
export class EmbeddedDatabaseInUseError extends Error {
  constructor(dataDir: string, pid: number) {
    super(
      `The embedded database in ${dataDir} is open in another process (pid ${pid}). Stop that process first: ` +
        'the server and the admin CLI cannot share an embedded database (point both at PostgreSQL with DATABASE_URL to run them together).',
    );
    this.name = 'EmbeddedDatabaseInUseError';
  }
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

const holderOf = (file: string): number | null => {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
};

/** Takes the lock of `dataDir` for this process; returns its release. */
export function lockEmbeddedDatabase(dataDir: string): () => void {
  const file = `${dataDir}.lock`;
  const release = () => {
    if (holderOf(file) !== process.pid) return;
    try {
      unlinkSync(file);
    } catch {
      // already gone
    }
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return release;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = holderOf(file);
    if (holder !== null && holder !== process.pid && isAlive(holder)) throw new EmbeddedDatabaseInUseError(dataDir, holder);
    try {
      unlinkSync(file); // a killed process's lock (or this process's own): taken over
    } catch {
      // released meanwhile
    }
  }
  throw new Error(`Could not take ${file}: other processes keep taking it. Start one process at a time on an embedded database.`);
}
