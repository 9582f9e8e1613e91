import type { MailMessage } from './mailer.js';

const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

export interface MailContent {
  subject: string;
  greeting?: string | null;
  lines: string[];
  /** A code shown large (one-time passwords). */
  code?: string;
  /** A button with its link; the link is also printed for plain-text readers. */
  action?: { label: string; url: string };
  footer?: string;
}

/** One service mail in both plain text and simple HTML. */
export function composeMail(to: string, content: MailContent): MailMessage {
  const greeting = content.greeting ? `Hi ${content.greeting},` : 'Hi,';
  const footer = content.footer ?? 'If you did not ask for this, you can ignore this email; nothing changes on your account.';
  const text = [
    greeting,
    '',
    ...content.lines,
    ...(content.code ? ['', `    ${content.code}`] : []),
    ...(content.action ? ['', `${content.action.label}: ${content.action.url}`] : []),
    '',
    footer,
    '',
    '— Storefront',
  ].join('\n');
  const html = [
    '<!doctype html><html><body style="font-family:system-ui,sans-serif;line-height:1.5;color:#111">',
    `<p>${escapeHtml(greeting)}</p>`,
    ...content.lines.map((line) => `<p>${escapeHtml(line)}</p>`),
    content.code ? `<p style="font-size:28px;font-weight:bold;letter-spacing:6px;font-family:monospace">${escapeHtml(content.code)}</p>` : '',
    content.action
      ? `<p><a href="${escapeHtml(content.action.url)}" style="display:inline-block;padding:10px 18px;background:#111;color:#fff;border-radius:6px;text-decoration:none">${escapeHtml(content.action.label)}</a></p>` +
        `<p style="font-size:12px;color:#555">Or open this link: ${escapeHtml(content.action.url)}</p>`
      : '',
    `<p style="font-size:12px;color:#555">${escapeHtml(footer)}</p>`,
    '<p>— Storefront</p>',
    '</body></html>',
  ].join('');
  return { to, subject: content.subject, text, html };
}
