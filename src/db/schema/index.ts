export * from './auth.js';
export * from './platform.js';
