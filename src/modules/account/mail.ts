// Moved to the platform so every module composes mail the same way.
export { composeMail, type MailContent } from '../../platform/mail/compose.js';
