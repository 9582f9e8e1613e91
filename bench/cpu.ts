// CPU accounting for the load benches: how much processor time each process of a run (the load generator, the fake
// upstream, the service or forwarder, PostgreSQL's backends) spends per request, and how busy the machine was. Read
// from /proc (Linux); elsewhere every reading is null and the benches print no CPU table. Processor time, unlike req/s,
// adds up: the sum per request says what a call costs the machine, whichever process is the bottleneck.
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's times (USER_HZ, 100 on every Linux build in use). */
const TICK_MS = 10;

const readOrNull = (file: string): string | null => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
};

/** User + system time of a process and all its threads so far, in ms; null when it cannot be read. */
export function processCpuMs(pid: number): number | null {
  const stat = readOrNull(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // The fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

/** CPU time of PostgreSQL's backends connected to `database` (the server's shared processes are left out), in ms. */
export function postgresBackendsCpuMs(database: string): number | null {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return null;
  }
  let total = 0;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    // A backend's title: "postgres: <user> <database> <client> <state>".
    const title = readOrNull(`/proc/${entry}/cmdline`);
    if (!title?.startsWith('postgres: ') || !title.split(/[\s\0]+/).includes(database)) continue;
    total += processCpuMs(Number(entry)) ?? 0;
  }
  return total;
}

/** The machine's busy and total time over all processors so far, in ticks (/proc/stat). */
function machineTicks(): { busy: number; total: number } | null {
  const line = readOrNull('/proc/stat')?.split('\n')[0];
  if (!line?.startsWith('cpu ')) return null;
  const ticks = line.trim().split(/\s+/).slice(1).map(Number);
  const total = ticks.reduce((sum, t) => sum + t, 0);
  return { busy: total - ticks[3]! - (ticks[4] ?? 0), total };
}

/** A process (or set of processes) whose CPU time a run reports under `name`. */
export interface CpuParty {
  name: string;
  read(): number | null;
}

export const processParty = (name: string, pid: number | undefined): CpuParty => ({ name, read: () => (pid === undefined ? null : processCpuMs(pid)) });

/** CPU spent over one or more loads: ms per party, and the machine's busy and total ticks meanwhile. */
export interface CpuUse {
  ms: Record<string, number>;
  busy: number;
  total: number;
}

/** What a target's load cost in CPU, with the requests it completed. */
export interface LoadCpu extends CpuUse {
  requests: number;
}

/** Runs `load` and returns what it cost each party; null when nothing can be read here. */
export async function measureCpu<T>(parties: CpuParty[], load: () => Promise<T>): Promise<{ result: T; cpu: CpuUse | null }> {
  const before = parties.map((party) => party.read());
  const machineBefore = machineTicks();
  const result = await load();
  const machineAfter = machineTicks();
  if (!machineBefore || !machineAfter) return { result, cpu: null };
  const ms: Record<string, number> = {};
  parties.forEach((party, i) => {
    const start = before[i] ?? null;
    const end = party.read();
    if (start !== null && end !== null) ms[party.name] = end - start;
  });
  return { result, cpu: { ms, busy: machineAfter.busy - machineBefore.busy, total: machineAfter.total - machineBefore.total } };
}

/** Two measurements of the same target added up (a target measured in slices). */
export function addCpu(a: LoadCpu | null | undefined, b: LoadCpu | null | undefined): LoadCpu | null {
  if (!a || !b) return a ?? b ?? null;
  const ms = { ...a.ms };
  for (const [name, value] of Object.entries(b.ms)) ms[name] = (ms[name] ?? 0) + value;
  return { ms, busy: a.busy + b.busy, total: a.total + b.total, requests: a.requests + b.requests };
}

/** Microseconds of CPU per request, by party and in all. */
export function perRequest(cpu: LoadCpu): { byParty: Record<string, number>; total: number } {
  const byParty: Record<string, number> = {};
  let total = 0;
  for (const [name, ms] of Object.entries(cpu.ms)) {
    byParty[name] = (1000 * ms) / Math.max(1, cpu.requests);
    total += byParty[name];
  }
  return { byParty, total };
}

/** How busy the machine was over the loads, in percent of all its processors' time. */
export const busyPercent = (cpu: CpuUse): number => Math.round((100 * cpu.busy) / Math.max(1, cpu.total));
