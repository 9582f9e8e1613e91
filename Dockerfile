# syntax=docker/dockerfile:1
# Storefront: a small production image. The build stage runs exactly what CI runs (.ci/run): `npm ci --no-audit
# --no-fund`, whose `prepare` script is `npm run build` (esbuild bundle into dist/ plus the migrated embedded database
# snapshot); then dev dependencies are pruned. The runtime stage holds only node_modules (production), dist/, the SQL
# migrations and seed sources (read at start), and runs as the unprivileged `node` user.

ARG NODE_IMAGE=node:22.21-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV CI=true
COPY package.json package-lock.json ./
COPY scripts/ scripts/
COPY src/ src/
RUN npm ci --no-audit --no-fund \
 && npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
# glibc keeps what V8's compiler threads free during start unless its trim threshold is fixed: ~40 MB resident
# (and the CMD runs V8 with one worker thread, whose arena holds the rest: see docs/decisions.md).
ENV NODE_ENV=production \
    MALLOC_TRIM_THRESHOLD_=131072 \
    PORT=3000 \
    HOST=0.0.0.0 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json /app/package-lock.json ./
COPY --from=build --chown=node:node /app/node_modules/ node_modules/
COPY --from=build --chown=node:node /app/dist/ dist/
COPY --from=build --chown=node:node /app/src/ src/
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 3000
# Ready means the database answers and the job workers run; 503 while starting or shutting down.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains requests and jobs (SHUTDOWN_TIMEOUT_MS) before exit; node runs as PID 1 and handles it itself.
STOPSIGNAL SIGTERM
CMD ["node", "--v8-pool-size=1", "--enable-source-maps", "dist/main.js"]
