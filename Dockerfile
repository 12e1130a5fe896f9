# onair: API, RTMP ingest, ffmpeg pipelines and webhook workers in one container.
#   docker build -t onair .
#   docker run -p 8080:8080 -p 1935:1935 -v onair-data:/app/storage onair

# --- build: production dependencies (nothing is compiled: SQLite is Node's own node:sqlite) ---
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No dev dependencies. Optional ones are needed (esbuild's and node-datachannel's binaries for
# this platform come as optional packages), except the npm-shipped ffmpeg: the image has
# Debian's, so @ffmpeg-installer would be dead weight.
RUN npm ci --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/@ffmpeg-installer

# --- run: Node, Debian's ffmpeg, the sources and page assets (tsx runs TypeScript directly) ---
FROM node:24-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production \
    DATA_DIR=/app/storage \
    PORT=8080 \
    RTMP_PORT=1935 \
    HOST=0.0.0.0
COPY --from=build /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY src ./src
COPY public ./public
COPY ffmpeg-profiles ./ffmpeg-profiles
# The image's unprivileged "node" user (uid 1000) owns the data directory and nothing else.
RUN mkdir -p /app/storage && chown node:node /app/storage
USER node
VOLUME ["/app/storage"]
EXPOSE 8080 1935
# Slim images have no curl: Node's fetch does the probe.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node itself, not npm, is PID 1: SIGTERM from `docker stop` reaches onair's clean shutdown.
CMD ["node", "--import", "tsx", "src/main.ts"]
