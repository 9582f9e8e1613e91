import { Type } from 'typebox';
import { DateTime, StrictObject } from '../../platform/http/schemas.js';

export const FLAG_KEY_PATTERN = '^[a-z0-9][a-z0-9._-]{0,63}$';
const FlagKey = Type.String({ pattern: FLAG_KEY_PATTERN, description: 'Lower-case letters, digits, ".", "_" and "-", 1-64 characters; fixed once created' });

const TargetingProperties = {
  everyone: Type.Boolean({ description: 'On for every viewer, anonymous ones included' }),
  userIds: Type.Array(Type.String({ format: 'uuid' }), { maxItems: 1000, description: 'On for these users' }),
  plans: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 50, description: 'On for viewers whose active plan has one of these slugs' }),
  percentage: Type.Integer({
    minimum: 0,
    maximum: 100,
    description: 'On for this share of signed-in users, stable per user (a hash of the flag key and the user id)',
  }),
};

export const FlagTargeting = Type.Object(TargetingProperties, { description: 'Who gets the flag while it is enabled: a viewer any rule picks out' });
const TargetingInput = StrictObject(
  {
    everyone: Type.Optional(TargetingProperties.everyone),
    userIds: Type.Optional(TargetingProperties.userIds),
    plans: Type.Optional(TargetingProperties.plans),
    percentage: Type.Optional(TargetingProperties.percentage),
  },
  { description: 'Rules to set; the ones left out keep their value (none on a new flag)' },
);

const Description = Type.String({ maxLength: 500 });
const Enabled = Type.Boolean({ description: 'The switch: off serves false to every viewer; on evaluates the targeting. Default off.' });

export const CreateFlagBody = StrictObject({
  key: FlagKey,
  description: Type.Optional(Description),
  enabled: Type.Optional(Enabled),
  targeting: Type.Optional(TargetingInput),
});

export const UpdateFlagBody = StrictObject(
  { description: Type.Optional(Description), enabled: Type.Optional(Enabled), targeting: Type.Optional(TargetingInput) },
  { minProperties: 1 },
);

export const FlagKeyParams = StrictObject({ key: FlagKey });

export const Flag = Type.Object({
  id: Type.String(),
  key: Type.String(),
  description: Type.String(),
  enabled: Type.Boolean(),
  targeting: FlagTargeting,
  createdAt: DateTime,
  updatedAt: DateTime,
});

export const FlagList = Type.Object({ items: Type.Array(Flag) });

export const ViewerFlags = Type.Object({
  flags: Type.Record(Type.String(), Type.Boolean(), { description: 'Every flag by key: its value for the viewer (anonymous without a token)' }),
});
