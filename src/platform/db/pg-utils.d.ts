/** node-postgres' own value serialisation (what `query` applies to parameters), which its typings do not declare. */
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue(value: unknown): unknown };
  export default utils;
}
