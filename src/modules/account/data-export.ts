import { and, desc, eq, inArray, isNotNull, lt } from 'drizzle-orm';
import { dataExports } from '../../db/schema/account.js';
import { DAY_MS } from '../../platform/clock/clock.js';
import { AppError, notFound } from '../../platform/http/errors.js';
import { defineJob } from '../../platform/jobs/jobs.js';
import { composeMail } from '../../platform/mail/compose.js';
import { keyedHash, sameDigest } from '../../platform/crypto/secrets.js';
import { writeArchive, type ExportSection } from './archive.js';
import type { AccountDeps } from './deps.js';

declare module '../../platform/jobs/jobs.js' {
  interface JobPayloads {
    'account.data-export': { exportId: string };
    'account.data-export.cleanup': Record<string, never>;
  }
}

export const EXPORT_LIST_SIZE = 10;
export const EXPORT_LINK_TTL_MS = 7 * DAY_MS;
export const EXPORT_JOB_RETRIES = 2;

type ExportRow = typeof dataExports.$inferSelect;

const linkGone = () => notFound('This download link is invalid or has expired. Request a new export from your account settings.');

export function createDataExports(deps: AccountDeps, sections: () => ExportSection[]) {
  const { db, clock, storage, jobs, pepper, publicBaseUrl, auth } = deps;

  const downloadToken = (row: Pick<ExportRow, 'id' | 'expiresAt'>) => keyedHash(pepper, 'data-export-download', `${row.id}:${row.expiresAt?.toISOString()}`);

  /** A signed link, so it can be opened in a browser (no Authorization header) until the export expires. */
  const downloadUrl = (row: ExportRow) =>
    row.status === 'READY' && row.expiresAt ? `${publicBaseUrl}/v1/account/data-export/${row.id}/download?token=${downloadToken(row)}` : null;

  const toExport = (row: ExportRow) => ({
    id: row.id,
    status: row.status,
    createdAt: row.createdAt.toISOString(),
    startedAt: row.startedAt?.toISOString() ?? null,
    completedAt: row.completedAt?.toISOString() ?? null,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    sizeBytes: row.sizeBytes,
    downloadUrl: downloadUrl(row),
    error: row.error,
  });

  async function fail(id: string, message: string) {
    await db.update(dataExports).set({ status: 'FAILED', error: message, completedAt: clock.now() }).where(eq(dataExports.id, id));
  }

  return {
    /** Queues an export; while one is still queued or running, that one is returned instead of a second. */
    async request(userId: string) {
      const [pending] = await db
        .select()
        .from(dataExports)
        .where(and(eq(dataExports.userId, userId), inArray(dataExports.status, ['QUEUED', 'RUNNING'])))
        .orderBy(desc(dataExports.createdAt))
        .limit(1);
      if (pending) return toExport(pending);
      const [row] = await db.insert(dataExports).values({ userId, status: 'QUEUED', createdAt: clock.now() }).returning();
      try {
        await jobs.send('account.data-export', { exportId: row!.id }, { singletonKey: row!.id });
      } catch (err) {
        await fail(row!.id, 'The export could not be queued.');
        throw new AppError(503, 'SERVICE_UNAVAILABLE', 'The export could not be queued right now. Try again in a minute.', null);
      }
      return toExport(row!);
    },

    async list(userId: string) {
      const rows = await db
        .select()
        .from(dataExports)
        .where(eq(dataExports.userId, userId))
        .orderBy(desc(dataExports.createdAt), desc(dataExports.id))
        .limit(EXPORT_LIST_SIZE);
      return { items: rows.map(toExport) };
    },

    /** The archive of a ready export, for a valid signed link. */
    async open(exportId: string, token: string) {
      const [row] = await db.select().from(dataExports).where(eq(dataExports.id, exportId));
      if (!row || row.status !== 'READY' || !row.storageKey || !row.expiresAt || row.expiresAt <= clock.now()) throw linkGone();
      if (!sameDigest(downloadToken(row), token)) throw linkGone();
      const info = await storage.stat(row.storageKey);
      if (!info) throw linkGone();
      return { stream: await storage.read(row.storageKey), size: info.size, filename: `storefront-export-${row.createdAt.toISOString().slice(0, 10)}.zip` };
    },

    /** Builds the archive of one export request (the job's work). */
    async build(exportId: string, attempt: { retryCount: number }): Promise<void> {
      const [row] = await db.select().from(dataExports).where(eq(dataExports.id, exportId));
      if (!row || row.status === 'READY' || row.status === 'FAILED' || row.status === 'EXPIRED') return;
      const user = await auth.users.findActiveById(row.userId);
      if (!user) return fail(row.id, 'The account no longer exists.');
      await db.update(dataExports).set({ status: 'RUNNING', startedAt: clock.now() }).where(eq(dataExports.id, row.id));
      const key = `exports/${row.userId}/${row.id}.zip`;
      try {
        const stored = await writeArchive(storage, key, row.userId, sections(), clock.now());
        const now = clock.now();
        const [ready] = await db
          .update(dataExports)
          .set({
            status: 'READY',
            storageKey: key,
            sizeBytes: stored.size,
            completedAt: now,
            expiresAt: new Date(now.getTime() + EXPORT_LINK_TTL_MS),
            error: null,
          })
          .where(eq(dataExports.id, row.id))
          .returning();
        await deps.mailer.send(
          composeMail(user.email, {
            subject: 'Your data export is ready',
            greeting: user.name,
            lines: ['The archive of your Storefront account data is ready. The link works for 7 days.'],
            action: { label: 'Download your data', url: downloadUrl(ready!)! },
            footer: 'If you did not ask for this export, change your password: someone may be using your account.',
          }),
        );
      } catch (err) {
        await storage.delete(key).catch(() => undefined);
        if (attempt.retryCount >= EXPORT_JOB_RETRIES) {
          await fail(row.id, 'The archive could not be built. Request a new export; if it fails again, contact support.');
        } else {
          await db.update(dataExports).set({ status: 'QUEUED' }).where(eq(dataExports.id, row.id));
        }
        throw err;
      }
    },

    /** Deletes the archives of expired exports. */
    async sweepExpired(): Promise<number> {
      const now = clock.now();
      const expired = await db
        .select()
        .from(dataExports)
        .where(and(eq(dataExports.status, 'READY'), isNotNull(dataExports.storageKey), lt(dataExports.expiresAt, now)));
      for (const row of expired) {
        await storage.delete(row.storageKey!);
        await db.update(dataExports).set({ status: 'EXPIRED', storageKey: null }).where(eq(dataExports.id, row.id));
      }
      return expired.length;
    },

    toExport,
  };
}

export type DataExports = ReturnType<typeof createDataExports>;

export function dataExportJobs(exports: Pick<DataExports, 'build' | 'sweepExpired'>) {
  return [
    defineJob({
      name: 'account.data-export',
      options: { retryLimit: EXPORT_JOB_RETRIES, retryDelaySeconds: 10, retryBackoff: true, expireInSeconds: 30 * 60 },
      handler: async ({ exportId }, meta) => exports.build(exportId, meta),
    }),
    defineJob({
      name: 'account.data-export.cleanup',
      options: { cron: '23 * * * *', retryLimit: 1 },
      handler: async () => {
        await exports.sweepExpired();
      },
    }),
  ];
}
