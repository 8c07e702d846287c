# syntax=docker/dockerfile:1
# Switchboard's image: production dependencies only, run as the unprivileged `node` user, data under /data.
# Build: docker build -t switchboard .   Run: see compose.yaml and docs/production.md.
# (No container engine runs where this file was written: it was not built there. See docs/production.md.)

ARG NODE_IMAGE=node:20-bookworm-slim

# 1. Production dependencies, from the lock file exactly (devDependencies left out).
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# 2. The runtime: the dependencies, the sources `npm start` bundles (and the files read beside them at run time:
#    migrations, worker scripts, provider files), and the bundle itself, built here once as the runtime user so
#    a container's start does not build it again (bin/bundle.js checks each input's modification time).
FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY providers ./providers
# dist/ stays writable by the runtime user: the provider catalog's cache is written there at first start.
RUN mkdir -p /data dist && chown node:node /data dist
USER node
RUN node --input-type=module -e "const { bundle } = await import('./bin/bundle.js'); bundle('main'); bundle('cli');"
# The embedded database (PGlite, the default without DATABASE_URL), the generated encryption key file and the
# sandbox's files live here: mount a volume, and back it up (docs/production.md).
VOLUME ["/data"]
EXPOSE 8080
# Liveness only (the process answers); balancers should ask /readyz, which also turns 503 while draining.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains (SHUTDOWN_DRAIN_MS), then finishes in-flight requests: give the container at least
# SHUTDOWN_DRAIN_MS + SHUTDOWN_TIMEOUT_MS to stop (compose.yaml: stop_grace_period).
STOPSIGNAL SIGTERM
# `npm start`'s command (package.json), run by node itself so that node receives the signals as PID 1.
CMD ["node", "--v8-pool-size=2", "--liftoff-only", "--no-allocation-site-pretenuring", "bin/start.js"]
