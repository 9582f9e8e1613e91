import { Type } from 'typebox';
import { JOB_KINDS, JOB_STATUSES } from '../../db/schema/jobs.js';
import { DateTime, Nullable, Page, StrictObject, pageQuery } from '../../platform/http/schemas.js';

export const JOBS_PAGE_DEFAULT = 20;
export const JOBS_PAGE_MAX = 100;

export const JobIdParams = StrictObject({ id: Type.String({ minLength: 1, maxLength: 64, description: 'The job id (jobId)' }) });

export const JobsQuery = StrictObject({
  ...pageQuery(JOBS_PAGE_DEFAULT, JOBS_PAGE_MAX),
  status: Type.Optional(Type.Enum(JOB_STATUSES)),
  kind: Type.Optional(Type.Enum(JOB_KINDS)),
});

export const JobSchema = Type.Object({
  jobId: Type.String(),
  id: Type.String({ description: 'Same as jobId' }),
  kind: Type.Enum(JOB_KINDS),
  status: Type.Enum(JOB_STATUSES, { description: 'QUEUED -> RUNNING -> SUCCEEDED | FAILED; QUEUED or RUNNING -> CANCELED' }),
  model: Type.String({ description: 'The model slug' }),
  progress: Type.Number({ minimum: 0, maximum: 1 }),
  output: Nullable(Type.Record(Type.String(), Type.Unknown(), { description: 'IMAGE { images, usage }; VIDEO kinds { videos, usage }' })),
  errorCode: Nullable(Type.String({ description: 'e.g. QUOTA_EXCEEDED, PROVIDER_UNAVAILABLE, BAD_REQUEST, TIMEOUT, CANCELED' })),
  errorMessage: Nullable(Type.String()),
  creditsReserved: Type.Integer({ description: 'Tokens held at submit: the price of the job' }),
  creditsConsumed: Nullable(Type.Integer({ description: 'Tokens finally charged (null until the job ends)' })),
  estimatedSeconds: Nullable(Type.Integer({ description: 'How long the provider expects the work to take, once it accepted it' })),
  createdAt: DateTime,
  updatedAt: DateTime,
  startedAt: Nullable(DateTime),
  finishedAt: Nullable(DateTime),
});

export const JobsPage = Page(JobSchema);
