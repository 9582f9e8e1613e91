import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { eq } from 'drizzle-orm';
import yauzl from 'yauzl';
import { dataExports } from '../../db/schema/account.js';
import { DAY_MS } from '../../platform/clock/clock.js';
import { bearer, createTestApp, json, signUp, type TestApp } from '../../../test/helpers/test-app.js';
import { lastMailTo } from '../../../test/helpers/outbox.js';
import { jsonFile, writeArchive } from './archive.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ startJobs: true, env: { PUBLIC_BASE_URL: 'https://api.example.com' } });
});
afterAll(async () => t?.close());

/** The entries of a ZIP archive, by path. */
function unzip(buffer: Buffer): Promise<Map<string, Buffer>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buffer, { lazyEntries: true }, (err, zip) => {
      if (err || !zip) return reject(err ?? new Error('not a ZIP archive'));
      const files = new Map<string, Buffer>();
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (streamErr, stream) => {
          if (streamErr || !stream) return reject(streamErr ?? new Error('unreadable ZIP entry'));
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => {
            files.set(entry.fileName, Buffer.concat(chunks));
            zip.readEntry();
          });
        });
      });
      zip.on('end', () => resolve(files));
      zip.on('error', reject);
      zip.readEntry();
    });
  });
}

const exportsOf = async (token: string) => json(await t.app.inject({ method: 'GET', url: '/v1/account/data-export', headers: bearer(token) })).items;

async function waitUntilSettled(token: string, id: string) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const row = (await exportsOf(token)).find((e: { id: string }) => e.id === id);
    if (row && (row.status === 'READY' || row.status === 'FAILED')) return row;
    if (Date.now() > deadline) throw new Error(`export ${id} did not finish: ${JSON.stringify(row)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const pathOf = (url: string) => url.replace('https://api.example.com', '');

describe('data export', () => {
  it('queues a job that writes a real ZIP of the account data to storage and marks the request ready with a download link', async () => {
    const { accessToken, email, user } = await signUp(t.app, { name: 'Export Me' });
    await t.app.inject({ method: 'POST', url: '/v1/auth/login', payload: { email, password: 'wrong password' } });
    await t.app.inject({ method: 'PATCH', url: '/v1/account/preferences', headers: bearer(accessToken), payload: { theme: 'dark' } });

    const response = await t.app.inject({ method: 'POST', url: '/v1/account/data-export', headers: bearer(accessToken) });
    expect(response.statusCode).toBe(202);
    const queued = json(response);
    expect(queued).toMatchObject({ id: expect.any(String), status: 'QUEUED', downloadUrl: null, sizeBytes: null, completedAt: null });

    const ready = await waitUntilSettled(accessToken, queued.id);
    expect(ready.status).toBe('READY');
    expect(ready.sizeBytes).toBeGreaterThan(100);
    expect(ready.downloadUrl).toMatch(new RegExp(`^https://api\\.example\\.com/v1/account/data-export/${queued.id}/download\\?token=[0-9a-f]{64}$`));
    expect(new Date(ready.expiresAt).getTime() - new Date(ready.completedAt).getTime()).toBe(7 * DAY_MS);
    const [row] = await t.platform.db.select().from(dataExports).where(eq(dataExports.id, queued.id));
    expect(await t.platform.storage.stat(row!.storageKey!)).toMatchObject({ size: ready.sizeBytes });

    const download = await t.app.inject({ method: 'GET', url: pathOf(ready.downloadUrl) });
    expect(download.statusCode).toBe(200);
    expect(download.headers['content-type']).toBe('application/zip');
    expect(download.headers['content-disposition']).toMatch(/^attachment; filename="storefront-export-\d{4}-\d{2}-\d{2}\.zip"$/);
    const files = await unzip(download.rawPayload);
    expect([...files.keys()].sort()).toEqual(
      [
        'README.txt',
        'manifest.json',
        'account/profile.json',
        'account/preferences.json',
        'account/notification-preferences.json',
        'account/two-factor.json',
        'account/linked-sign-in-providers.json',
        'account/blocks.json',
        'security/sessions.json',
        'security/security-events.json',
        'notifications/notifications.json',
        'community/posts.json',
        'community/comments.json',
        'community/likes.json',
        'community/following.json',
        'community/followers.json',
        'community/reports.json',
      ].sort(),
    );
    const read = (name: string) => JSON.parse(files.get(name)!.toString('utf8'));
    expect(read('account/profile.json')).toMatchObject({ id: user.id, email, name: 'Export Me', emailVerified: false });
    expect(read('account/preferences.json')).toMatchObject({ theme: 'dark' });
    expect(read('security/security-events.json').map((e: { kind: string }) => e.kind)).toContain('LOGIN_FAILED');
    expect(read('security/sessions.json')).toHaveLength(1);
    expect(read('manifest.json').sections.map((s: { name: string }) => s.name)).toEqual(['account', 'security', 'notifications', 'community']);
    const serialized = [...files.values()].map((b) => b.toString('utf8')).join('\n');
    expect(serialized).not.toMatch(/argon2|passwordHash|tokenHash|secret/i);

    // the user gets the link by mail too
    const mail = await lastMailTo(t.platform.db, email);
    expect(mail.subject).toBe('Your data export is ready');
    expect(mail.text).toContain(ready.downloadUrl);
  });

  it('the link refuses a wrong token and stops working after 7 days, when the archive is swept away', async () => {
    const { accessToken } = await signUp(t.app);
    const { id } = json(await t.app.inject({ method: 'POST', url: '/v1/account/data-export', headers: bearer(accessToken) }));
    const ready = await waitUntilSettled(accessToken, id);
    const url = pathOf(ready.downloadUrl);
    const wrong = await t.app.inject({ method: 'GET', url: url.replace(/token=[0-9a-f]{4}/, 'token=0000') });
    expect(wrong.statusCode).toBe(404);
    expect(json(wrong).error.code).toBe('NOT_FOUND');
    expect((await t.app.inject({ method: 'GET', url: url.split('?')[0]! })).statusCode).toBe(400);

    t.clock.advance(7 * DAY_MS + 1000);
    const late = await t.app.inject({ method: 'GET', url });
    expect(late.statusCode).toBe(404);
    expect(json(late).error.message).toMatch(/expired/);
    const [row] = await t.platform.db.select().from(dataExports).where(eq(dataExports.id, id));
    expect(await t.services.account.exports.sweepExpired()).toBeGreaterThanOrEqual(1);
    expect(await t.platform.storage.stat(row!.storageKey!)).toBeNull();
    const [swept] = await t.platform.db.select().from(dataExports).where(eq(dataExports.id, id));
    expect(swept).toMatchObject({ status: 'EXPIRED', storageKey: null });
  });

  it('while one export is queued or running, asking again returns it instead of a second', async () => {
    const { accessToken, user } = await signUp(t.app);
    const [running] = await t.platform.db.insert(dataExports).values({ userId: user.id, status: 'RUNNING', createdAt: t.clock.now() }).returning();
    const again = await t.app.inject({ method: 'POST', url: '/v1/account/data-export', headers: bearer(accessToken) });
    expect(again.statusCode).toBe(202);
    expect(json(again)).toMatchObject({ id: running!.id, status: 'RUNNING' });
    expect(await t.platform.db.select().from(dataExports).where(eq(dataExports.userId, user.id))).toHaveLength(1);
  });

  it("lists the last 10 requests, newest first, only the caller's", async () => {
    const { accessToken, user } = await signUp(t.app);
    const other = await signUp(t.app);
    for (let i = 0; i < 12; i++) {
      t.clock.advance(1000);
      await t.platform.db.insert(dataExports).values({ userId: user.id, status: 'FAILED', error: `old ${i}`, createdAt: t.clock.now() });
    }
    const items = await exportsOf(accessToken);
    expect(items).toHaveLength(10);
    expect(items[0].error).toBe('old 11');
    expect(items[9].error).toBe('old 2');
    expect(await exportsOf(other.accessToken)).toHaveLength(0);
  });

  it('needs a token to ask or list; a foreign export id with a wrong token gives nothing', async () => {
    expect((await t.app.inject({ method: 'POST', url: '/v1/account/data-export' })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'GET', url: '/v1/account/data-export' })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'GET', url: '/v1/account/data-export/not-a-uuid/download?token=abc' })).statusCode).toBe(400);
  });

  it('a build that fails is retried, and marked FAILED with a message once the retries are used up', async () => {
    const failing = await createTestApp();
    try {
      // the same service of another app instance, with a section that cannot be read
      failing.services.account.addExportSection({
        name: 'broken',
        collect: async () => [{ path: 'x.bin', content: async () => Promise.reject(new Error('disk gone')) }],
      });
      const { db } = failing.platform;
      const [copy] = await db
        .insert(dataExports)
        .values({ userId: (await signUp(failing.app)).user.id, status: 'QUEUED', createdAt: failing.clock.now() })
        .returning();
      await expect(failing.services.account.exports.build(copy!.id, { retryCount: 0 })).rejects.toThrow('disk gone');
      expect((await db.select().from(dataExports).where(eq(dataExports.id, copy!.id)))[0]).toMatchObject({ status: 'QUEUED', storageKey: null });
      await expect(failing.services.account.exports.build(copy!.id, { retryCount: 2 })).rejects.toThrow('disk gone');
      const [failed] = await db.select().from(dataExports).where(eq(dataExports.id, copy!.id));
      expect(failed).toMatchObject({ status: 'FAILED', error: expect.stringContaining('could not be built') });
      expect(await failing.platform.storage.stat(`exports/${copy!.userId}/${copy!.id}.zip`)).toBeNull();
    } finally {
      await failing.close();
    }
  });
});

describe('writeArchive', () => {
  it('streams files other modules contribute (e.g. generation media from storage) into the ZIP unchanged', async () => {
    const media = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 256));
    await t.platform.storage.put('test-media/clip.bin', media);
    const sections = [
      {
        name: 'generations',
        collect: async () => [
          jsonFile('generations.json', [{ id: 'g1', file: 'media/clip.bin' }]),
          { path: 'media/clip.bin', content: () => t.platform.storage.read('test-media/clip.bin') },
          { path: 'media/inline.txt', content: Buffer.from('inline bytes') },
          { path: 'media/stream.txt', content: async () => Readable.from([Buffer.from('streamed ')]) },
        ],
      },
    ];
    const stored = await writeArchive(t.platform.storage, 'test-exports/a.zip', 'user-1', sections, t.clock.now());
    const chunks: Buffer[] = [];
    for await (const chunk of await t.platform.storage.read('test-exports/a.zip')) chunks.push(chunk as Buffer);
    const zipped = Buffer.concat(chunks);
    expect(zipped.length).toBe(stored.size);
    const files = await unzip(zipped);
    expect(files.get('generations/media/clip.bin')!.equals(media)).toBe(true);
    expect(files.get('generations/media/inline.txt')!.toString()).toBe('inline bytes');
    expect(files.get('generations/media/stream.txt')!.toString()).toBe('streamed ');
    expect(JSON.parse(files.get('manifest.json')!.toString()).sections).toEqual([
      {
        name: 'generations',
        files: ['generations/generations.json', 'generations/media/clip.bin', 'generations/media/inline.txt', 'generations/media/stream.txt'],
      },
    ]);
  });

  it('refuses paths that could escape the archive folder', async () => {
    for (const path of ['../etc/passwd', '/abs.json', 'a/../../b', '.hidden']) {
      await expect(
        writeArchive(t.platform.storage, 'test-exports/bad.zip', 'u', [{ name: 'x', collect: async () => [jsonFile(path, {})] }], t.clock.now()),
      ).rejects.toThrow('Unsafe path');
    }
  });
});
