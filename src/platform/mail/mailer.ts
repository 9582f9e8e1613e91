import { eq, sql } from 'drizzle-orm';
import type { Transporter } from 'nodemailer';
import type { FastifyBaseLogger } from 'fastify';
import { mailOutbox } from '../../db/schema/platform.js';
import type { Db } from '../db/database.js';
import { defineJob, type Jobs } from '../jobs/jobs.js';

declare module '../jobs/jobs.js' {
  interface JobPayloads {
    'mail.deliver': { mailId: string };
  }
}

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

export interface Mailer {
  /** Records the message and queues its delivery; returns the outbox id. Never blocks on SMTP. */
  send(message: MailMessage): Promise<string>;
}

export interface MailerDeps {
  db: Db;
  jobs: Pick<Jobs, 'send'>;
  logger: FastifyBaseLogger;
  smtpUrl: string | null;
  from: string;
  /** Log message bodies of stored mail (development), so a person can read codes without SMTP. */
  logBodies: boolean;
}

export function createMailer(deps: MailerDeps): Mailer {
  return {
    async send(message) {
      const [row] = await deps.db
        .insert(mailOutbox)
        .values({ ...message, from: deps.from, status: deps.smtpUrl ? 'QUEUED' : 'STORED' })
        .returning({ id: mailOutbox.id });
      const mailId = row!.id;
      if (deps.smtpUrl) {
        await deps.jobs.send('mail.deliver', { mailId });
      } else {
        deps.logger.info(
          { mailId, to: message.to, subject: message.subject, ...(deps.logBodies ? { text: message.text } : {}) },
          'mail stored in outbox (SMTP_URL is not set)',
        );
      }
      return mailId;
    },
  };
}

/**
 * The queue that hands queued mail to the SMTP server, with retries. It is registered in both modes, so the queue
 * always has its handler; without SMTP nothing is queued, and a mail queued before SMTP was switched off stays stored.
 */
export function mailDeliveryJob(deps: { db: Db; smtpUrl: string | null; logger: FastifyBaseLogger }) {
  // nodemailer (a few MB of heap) is loaded by the first delivery: a service without SMTP never needs it.
  let transport: Promise<Transporter> | undefined;
  const transportOf = (smtpUrl: string) => (transport ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(smtpUrl)));
  return defineJob({
    name: 'mail.deliver',
    options: { retryLimit: 5, retryDelaySeconds: 10, retryBackoff: true },
    handler: async ({ mailId }) => {
      const [mail] = await deps.db.select().from(mailOutbox).where(eq(mailOutbox.id, mailId));
      if (!mail || mail.status === 'SENT') return;
      if (!deps.smtpUrl) {
        await deps.db.update(mailOutbox).set({ status: 'STORED' }).where(eq(mailOutbox.id, mailId));
        deps.logger.warn({ mailId }, 'mail kept in the outbox: SMTP_URL is not set any more');
        return;
      }
      try {
        await (
          await transportOf(deps.smtpUrl)
        ).sendMail({ from: mail.from, to: mail.to, subject: mail.subject, text: mail.text, html: mail.html ?? undefined });
        await deps.db
          .update(mailOutbox)
          .set({ status: 'SENT', sentAt: new Date(), attempts: sql`${mailOutbox.attempts} + 1` })
          .where(eq(mailOutbox.id, mailId));
      } catch (err) {
        const lastError = err instanceof Error ? err.message : String(err);
        await deps.db
          .update(mailOutbox)
          .set({ status: 'FAILED', lastError, attempts: sql`${mailOutbox.attempts} + 1` })
          .where(eq(mailOutbox.id, mailId));
        deps.logger.warn({ mailId, err: lastError }, 'mail delivery failed; will retry');
        throw err;
      }
    },
  });
}
