import { serialize } from 'pg-protocol';
import { describe, expect, it } from 'vitest';
import { encodeGroup, type EncodedStatement, type GroupPlan } from './pg-group-encoder.js';

// The group's bytes must be exactly what node-postgres' own serializer writes for the same messages.
const viaDriver = (statements: EncodedStatement[], plan: GroupPlan) =>
  Buffer.concat([
    ...statements.flatMap((statement, i) => [
      ...(plan.parse.has(i) ? [serialize.parse({ name: statement.name, text: statement.text, types: [] })] : []),
      serialize.bind({ statement: statement.name, values: statement.values }),
      ...(plan.describe.has(i) ? [serialize.describe({ type: 'P', name: '' })] : []),
      serialize.execute({ portal: '' }),
    ]),
    serialize.sync(),
  ]);

describe('encodeGroup', () => {
  it("writes the driver's bytes for every kind of value: text, unicode, empty, null and binary", () => {
    const statements: EncodedStatement[] = [
      { name: 'sf_1', text: 'insert into t (a, b) values ($1, $2)', values: ['plain', null] },
      { name: 'sf_4', text: 'select $1, $2', values: ['ascii until the end é', 'y'.repeat(64) + 'ß'] },
      { name: 'sf_2', text: "select $1::text || ' é', $2, $3", values: ['ünïcødé 🚀 漢字', '', Buffer.from([0, 1, 2, 255])] },
      { name: 'sf_1', text: 'insert into t (a, b) values ($1, $2)', values: ['x'.repeat(70_000), '{"a":[1,"two"]}'] },
      { name: 'sf_3', text: 'select 1', values: [] },
    ];
    const plan = { parse: new Set([0, 1, 2]), describe: new Set([0, 1, 2, 3, 4]) };
    expect(encodeGroup(statements, plan).equals(viaDriver(statements, plan))).toBe(true);
  });

  it('writes a Describe only where asked: the columns of the others are known', () => {
    const statements: EncodedStatement[] = [
      { name: 'sf_1', text: 'select $1::int as a', values: ['1'] },
      { name: 'sf_2', text: 'select $1::text as b', values: ['two'] },
      { name: 'sf_1', text: 'select $1::int as a', values: ['3'] },
    ];
    for (const describe of [new Set<number>(), new Set([1]), new Set([0, 2])]) {
      const plan = { parse: new Set([0]), describe };
      expect(encodeGroup(statements, plan).equals(viaDriver(statements, plan))).toBe(true);
    }
  });

  it('writes a Parse only where asked, and one Sync at the end', () => {
    const statements: EncodedStatement[] = [{ name: 'sf_9', text: 'select $1::int', values: ['7'] }];
    const prepared = encodeGroup(statements, { parse: new Set(), describe: new Set([0]) });
    const fresh = encodeGroup(statements, { parse: new Set([0]), describe: new Set([0]) });
    expect(prepared[0]).toBe(0x42); // Bind first
    expect(fresh[0]).toBe(0x50); // Parse first
    expect(fresh.subarray(fresh.length - prepared.length).equals(prepared)).toBe(true);
    expect([...prepared.subarray(prepared.length - 5)]).toEqual([0x53, 0, 0, 0, 4]);
  });
});
