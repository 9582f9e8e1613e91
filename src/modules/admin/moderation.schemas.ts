import { Type } from 'typebox';
import { DateTime, Nullable, Page, StrictObject, pageQuery } from '../../platform/http/schemas.js';

const STATUSES = ['OPEN', 'REVIEWING', 'ACTIONED', 'DISMISSED'] as const;
const TARGETS = ['POST', 'COMMENT', 'USER'] as const;
const Note = Type.String({
  minLength: 1,
  maxLength: 2000,
  pattern: '\\S',
  description: "The moderator's note (1-2000 characters), kept on the report and in the audit trail",
});

export const ReportIdParams = StrictObject({ id: Type.String({ format: 'uuid', description: 'The report id' }) });

export const ReportListQuery = StrictObject({
  ...pageQuery(50, 100),
  status: Type.Optional(Type.Enum([...STATUSES])),
  targetType: Type.Optional(Type.Enum([...TARGETS])),
});

export const AdminReport = Type.Object({
  id: Type.String(),
  reporterId: Type.String(),
  targetType: Type.Enum([...TARGETS]),
  targetId: Type.String(),
  reason: Type.String(),
  details: Nullable(Type.String()),
  status: Type.Enum([...STATUSES]),
  createdAt: DateTime,
  resolvedAt: Nullable(DateTime),
  resolvedBy: Nullable(Type.String({ description: 'The operator who resolved it' })),
  resolutionNote: Nullable(Type.String()),
});
export const AdminReportPage = Page(AdminReport);

export const ResolveBody = StrictObject({
  outcome: Type.Enum(['ACTIONED', 'DISMISSED'], { description: 'DISMISSED: nothing wrong; ACTIONED: dealt with (e.g. the author was warned)' }),
  note: Note,
});

export const HideBody = StrictObject({ note: Note });

export const HideResult = Type.Object({
  report: AdminReport,
  hidden: Type.Boolean({ description: 'false when the content was already hidden' }),
  reportsClosed: Type.Integer({ description: 'Unresolved reports on the same content closed as ACTIONED, this one included' }),
});
