// Summarises a V8 CPU profile (`node --cpu-prof`, or BENCH_CPU_PROF=<dir> on a bench): where the time went, by
// package or area (self time) and by function (self and total time).
//   npx tsx bench/cpu-profile-summary.ts <file.cpuprofile> [top=25] [from-to]
// `from-to` (seconds since the profile started, e.g. `12-16`) keeps one phase of a bench; the busy share per second
// is printed first to find it.
import { readFile } from 'node:fs/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg, windowArg] = process.argv.slice(2);
if (!file) throw new Error('usage: cpu-profile-summary.ts <file.cpuprofile> [top] [from-to]');
const top = Number(topArg ?? 25);
const [from, to] = windowArg ? windowArg.split('-').map((s) => Number(s) * 1e6) : [0, Number.POSITIVE_INFINITY];
const profile = JSON.parse(await readFile(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

/** The package (node_modules/<name>), our own source folder, or Node's internals a frame belongs to. */
function areaOf(node: ProfileNode): string {
  const { url, functionName } = node.callFrame;
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const internal = /^node:internal\/([^/]+(?:\/[^/]+)?)/.exec(url);
  if (internal) return `node:${internal[1]}`;
  if (url.startsWith('node:')) return url;
  const own = /\/(src|bench|test)\/(.+?)(?:\/[^/]+)?$/.exec(url);
  return own ? `${own[1]}/${own[2]}` : url;
}
const labelOf = (node: ProfileNode) => `${node.callFrame.functionName || '(anonymous)'} ${areaOf(node)}:${node.callFrame.lineNumber + 1}`;

const selfByArea = new Map<string, number>();
const selfByFunction = new Map<string, number>();
const totalByFunction = new Map<string, number>();
const busyPerSecond: number[] = [];
let total = 0;
let at = 0;
profile.samples.forEach((id, i) => {
  const delta = profile.timeDeltas[i] ?? 0;
  at += delta;
  const node = byId.get(id)!;
  const second = Math.floor(at / 1e6);
  if (node.callFrame.functionName !== '(idle)') busyPerSecond[second] = (busyPerSecond[second] ?? 0) + delta;
  if (at < from! || at >= to!) return;
  total += delta;
  selfByArea.set(areaOf(node), (selfByArea.get(areaOf(node)) ?? 0) + delta);
  selfByFunction.set(labelOf(node), (selfByFunction.get(labelOf(node)) ?? 0) + delta);
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const label = labelOf(byId.get(cur)!);
    if (seen.has(label)) continue;
    seen.add(label);
    totalByFunction.set(label, (totalByFunction.get(label) ?? 0) + delta);
  }
});

const busy = total - (selfByArea.get('(idle)') ?? 0);
const pct = (us: number, of = busy) => `${((100 * us) / of).toFixed(1)}%`;
const print = (title: string, map: Map<string, number>, skip: (key: string) => boolean = () => false) => {
  console.log(`\n${title}`);
  for (const [key, us] of [...map]
    .filter(([k]) => !skip(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)) {
    console.log(`  ${pct(us).padStart(6)}  ${(us / 1000).toFixed(0).padStart(7)} ms  ${key}`);
  }
};
console.log(`Busy % per second: ${Array.from(busyPerSecond, (us) => Math.round((us ?? 0) / 1e4)).join(' ')}`);
console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy (${pct(busy, total)}); shares below are of busy time.`);
print('Self time by area', selfByArea, (k) => k === '(idle)');
print('Self time by function', selfByFunction, (k) => k.startsWith('(idle)'));
print('Total time by function (with callees)', totalByFunction, (k) => k.startsWith('(idle)') || k.startsWith('(root)'));
