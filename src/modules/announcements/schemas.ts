import { Type } from 'typebox';
import { DateTime, Nullable, Page, StrictObject, pageQuery } from '../../platform/http/schemas.js';

const Level = Type.Union([Type.Literal('INFO'), Type.Literal('WARNING'), Type.Literal('CRITICAL')], {
  description: 'INFO, WARNING or CRITICAL; CRITICAL notifications reach users whatever their preferences',
});
const Audience = Type.Union([Type.Literal('EVERYONE'), Type.Literal('SIGNED_IN'), Type.Literal('PLANS')], {
  description: 'EVERYONE (anonymous visitors too), SIGNED_IN, or PLANS (signed-in users whose active plan is listed)',
});
const Title = Type.String({ minLength: 1, maxLength: 200 });
const Body = Type.String({ minLength: 1, maxLength: 5000 });
const Link = Nullable(Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2000, description: 'An http(s) link the banner points to' }));
const Plans = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 50, description: 'Plan slugs, for the PLANS audience' });

const bannerProperties = {
  id: Type.String(),
  title: Type.String(),
  body: Type.String(),
  level: Level,
  link: Nullable(Type.String()),
  startsAt: DateTime,
  endsAt: Nullable(DateTime),
};

export const Banner = Type.Object(bannerProperties);

export const BannerList = Type.Object({ items: Type.Array(Banner) });

export const Announcement = Type.Object({
  ...bannerProperties,
  audience: Audience,
  plans: Type.Array(Type.String()),
  notification: Type.Object(
    {
      requestedAt: Nullable(DateTime),
      sentAt: Nullable(DateTime),
      recipients: Type.Integer({ description: 'Notifications written so far' }),
    },
    { description: 'The ANNOUNCEMENT notification round: requested once, then sent in the background' },
  ),
  createdBy: Nullable(Type.String()),
  createdAt: DateTime,
  updatedAt: DateTime,
});

export const AnnouncementPage = Page(Announcement);
export const AnnouncementsQuery = StrictObject(pageQuery(20, 100));
export const AnnouncementIdParams = StrictObject({ id: Type.String({ format: 'uuid' }) });

export const CreateAnnouncementBody = StrictObject({
  title: Title,
  body: Body,
  level: Type.Optional(Level),
  link: Type.Optional(Link),
  audience: Type.Optional(Audience),
  plans: Type.Optional(Plans),
  startsAt: Type.Optional(Type.String({ format: 'date-time', description: 'Default: now' })),
  endsAt: Type.Optional(Nullable(Type.String({ format: 'date-time', description: 'Default: never' }))),
  notify: Type.Optional(Type.Boolean({ description: 'Also send an ANNOUNCEMENT notification to the audience (once, in the background)' })),
});

export const UpdateAnnouncementBody = StrictObject(
  {
    title: Type.Optional(Title),
    body: Type.Optional(Body),
    level: Type.Optional(Level),
    link: Type.Optional(Link),
    audience: Type.Optional(Audience),
    plans: Type.Optional(Plans),
    startsAt: Type.Optional(Type.String({ format: 'date-time' })),
    endsAt: Type.Optional(Nullable(Type.String({ format: 'date-time' }))),
  },
  { minProperties: 1 },
);

export const NotifyResult = Type.Object({
  queued: Type.Boolean({ description: 'true when this call started the round; false when it had been requested before (nothing is sent twice)' }),
  announcement: Announcement,
});
