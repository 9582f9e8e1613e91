import { desc, eq } from 'drizzle-orm';
import { mailOutbox } from '../../src/db/schema/platform.js';
import type { Db } from '../../src/platform/db/database.js';

export type OutboxMail = typeof mailOutbox.$inferSelect;

/** Every mail stored for an address, newest first (tests run without SMTP, so mail stays in the outbox). */
export async function mailsTo(db: Db, to: string): Promise<OutboxMail[]> {
  return db.select().from(mailOutbox).where(eq(mailOutbox.to, to.toLowerCase())).orderBy(desc(mailOutbox.createdAt), desc(mailOutbox.id));
}

export async function lastMailTo(db: Db, to: string): Promise<OutboxMail> {
  const [mail] = await mailsTo(db, to);
  if (!mail) throw new Error(`no mail to ${to}`);
  return mail;
}

/** The first match of `pattern`'s first group in the mail's text. */
export function extract(mail: OutboxMail, pattern: RegExp): string {
  const match = pattern.exec(mail.text);
  if (!match?.[1]) throw new Error(`pattern ${pattern} not found in mail "${mail.subject}": ${mail.text}`);
  return match[1];
}
