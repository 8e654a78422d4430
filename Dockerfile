# Aerie's container image: the compiled build (dist/) and its production dependencies.
#   docker build -t aerie .
#   docker run -v aerie-data:/var/lib/aerie -p 8080:8080 aerie                 # serve --role all
#   docker run ... aerie serve --role api  |  aerie worker --node local  |  aerie migrate
# deploy/compose.yaml runs it beside PostgreSQL, Redis and an S3-compatible store; see docs/deploy.md.

# Build: all dependencies (TypeScript, esbuild, Vite, and better-sqlite3 with its Node-API binary),
# type-check src/ and bundle it into dist/ (scripts/bundle.ts), the web panel into dist/web (`npm ci`
# runs the prepare script, `npm run build`),
# then drop the development dependencies.
# `npm ci --omit=dev` alone cannot build: the compiler is a development dependency.
FROM node:24.21.0-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY scripts/bundle.ts ./scripts/
COPY src ./src
# The web panel (React, built by Vite into dist/web; web/vite.config.ts).
COPY web ./web
RUN npm ci --no-audit --no-fund \
  && npm prune --omit=dev --no-audit --no-fund \
  && npm cache clean --force

# Runtime: the same Debian release as the build stage, so the native module built there runs here.
FROM node:24.21.0-bookworm-slim
ENV NODE_ENV=production \
  HOST=0.0.0.0 \
  PORT=8080 \
  AERIE_DATA_DIR=/var/lib/aerie
# The process runs as aerie and may write only its data directory; the code stays root's, read-only.
RUN groupadd --system --gid 10001 aerie \
  && useradd --system --uid 10001 --gid aerie --home-dir /var/lib/aerie --no-create-home --shell /usr/sbin/nologin aerie \
  && mkdir -p /var/lib/aerie \
  && chown aerie:aerie /var/lib/aerie \
  && chmod 0750 /var/lib/aerie
WORKDIR /opt/aerie
COPY --from=build --chown=root:root /src/package.json /src/package-lock.json ./
COPY --from=build --chown=root:root /src/node_modules ./node_modules
COPY --from=build --chown=root:root /src/bin ./bin
COPY --from=build --chown=root:root /src/dist ./dist
USER aerie
VOLUME ["/var/lib/aerie"]
EXPOSE 8080
# Liveness only (the process answers). The image has no curl; Node's fetch does the probe. A worker
# (`aerie worker`) has no HTTP listener: give it AERIE_METRICS_ADDRESS and probe /metrics there, or
# turn this check off (deploy/compose.yaml does the former).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Aerie exits on SIGTERM after AERIE_SHUTDOWN_TIMEOUT_SECONDS (30) at most: stop it with a longer
# timeout (docker stop -t 60; stop_grace_period in compose).
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/opt/aerie/bin/aerie.js"]
CMD ["serve"]
