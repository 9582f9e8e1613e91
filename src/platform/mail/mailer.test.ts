import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { mailOutbox } from '../../db/schema/platform.js';
import { createTestApp, type TestApp } from '../../../test/helpers/test-app.js';

interface Received {
  from: string;
  to: string[];
  raw: string;
}

// A real SMTP server inside the test; the service delivers to it through its queued SMTP transport.
const received: Received[] = [];
const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  onData(stream, session, callback) {
    let raw = '';
    stream.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    stream.on('end', () => {
      received.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address), raw });
      callback();
    });
  },
});

let withSmtp: TestApp;
let withoutSmtp: TestApp;

beforeAll(async () => {
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const { port } = smtp.server.address() as AddressInfo;
  withSmtp = await createTestApp({ startJobs: true, env: { SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: 'Storefront <mail@storefront.test>' } });
  withoutSmtp = await createTestApp();
});

afterAll(async () => {
  await withSmtp?.close();
  await withoutSmtp?.close();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

describe('mailer', () => {
  it('delivers over SMTP when SMTP_URL is set, with plain and HTML parts', async () => {
    const id = await withSmtp.platform.mailer.send({ to: 'reader@example.com', subject: 'Your code', text: 'Code: 1234', html: '<p>Code: <b>1234</b></p>' });
    const until = Date.now() + 15_000;
    while (!received.some((m) => m.to.includes('reader@example.com')) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    const message = received.find((m) => m.to.includes('reader@example.com'));
    expect(message).toBeDefined();
    expect(message!.from).toBe('mail@storefront.test');
    expect(message!.raw).toContain('Subject: Your code');
    expect(message!.raw).toContain('Code: 1234');
    expect(message!.raw).toMatch(/text\/html/);

    let row = (await withSmtp.platform.db.select().from(mailOutbox).where(eq(mailOutbox.id, id)))[0];
    for (let i = 0; i < 50 && row?.status !== 'SENT'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      row = (await withSmtp.platform.db.select().from(mailOutbox).where(eq(mailOutbox.id, id)))[0];
    }
    expect(row).toMatchObject({ status: 'SENT', attempts: 1 });
  });

  it('stores the mail in the outbox without SMTP_URL', async () => {
    const id = await withoutSmtp.platform.mailer.send({ to: 'offline@example.com', subject: 'Hello', text: 'Body' });
    const [row] = await withoutSmtp.platform.db.select().from(mailOutbox).where(eq(mailOutbox.id, id));
    expect(row).toMatchObject({ to: 'offline@example.com', subject: 'Hello', text: 'Body', status: 'STORED' });
  });
});
