import { badRequest } from '../../../platform/http/errors.js';
import type { GatewayModel } from '../../catalog/service.js';

export interface Descriptor {
  type?: string;
  values?: readonly unknown[];
  min?: number;
  max?: number;
  default?: unknown;
  prices?: Record<string, unknown>;
}

export const descriptorOf = (block: Record<string, unknown>, key: string): Descriptor | null => {
  const value = block[key];
  return value && typeof value === 'object' ? value : null;
};

export const controlDefault = (model: GatewayModel, key: string): unknown => descriptorOf(model.capabilities.controls, key)?.default;

/** One value against its descriptor; the message names the field and what it accepts. */
export function checkValue(model: GatewayModel, field: string, descriptor: Descriptor, value: unknown): void {
  const fail = (accepts: string) => {
    throw badRequest(`${field} ${accepts} for the model "${model.slug}" (got ${JSON.stringify(value)}).`, [{ field, message: accepts }]);
  };
  switch (descriptor.type) {
    case 'enum':
      if (descriptor.values && !descriptor.values.includes(value)) fail(`must be one of ${descriptor.values.map((v) => JSON.stringify(v)).join(', ')}`);
      return;
    case 'integer':
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value) || (descriptor.type === 'integer' && !Number.isInteger(value)))
        fail(`must be ${descriptor.type === 'integer' ? 'an integer' : 'a number'}`);
      const n = value as number;
      if ((descriptor.min !== undefined && n < descriptor.min) || (descriptor.max !== undefined && n > descriptor.max)) {
        fail(`must be between ${descriptor.min ?? '-∞'} and ${descriptor.max ?? '∞'}`);
      }
      return;
    }
    case 'string':
    case 'image':
      if (typeof value !== 'string') fail('must be a string');
      return;
    case 'object':
      if (!value || typeof value !== 'object' || Array.isArray(value)) fail('must be an object');
      return;
    case 'boolean':
      if (typeof value !== 'boolean') fail('must be true or false');
      return;
    default:
      return;
  }
}

/** A first-class request field: the model must advertise it in `capabilities.controls`, and the value must fit. */
export function checkControl(model: GatewayModel, key: string, value: unknown): void {
  const descriptor = descriptorOf(model.capabilities.controls, key);
  if (!descriptor) {
    const taken = Object.keys(model.capabilities.controls).filter((k) => descriptorOf(model.capabilities.controls, k));
    throw badRequest(`The model "${model.slug}" does not take ${key}. It takes: ${taken.join(', ') || 'no optional controls'}.`, [
      { field: key, message: 'not supported by this model' },
    ]);
  }
  checkValue(model, key, descriptor, value);
}
