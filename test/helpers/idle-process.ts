import { spawn } from 'node:child_process';

/** Another process that does nothing until it is killed (a live pid that is not ours), and its SIGKILL. */
export function idleProcess(): { pid: number; kill: () => Promise<void> } {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    pid: child.pid!,
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}
