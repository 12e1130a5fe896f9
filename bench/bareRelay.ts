// A bare RTMP relay for baselines: onair's own RTMP server and LiveSource (the GOP cache and
// the fan-out) with no admission and no cap on a reader that falls behind. Publish to
// rtmp://127.0.0.1:<port>/live/<name>, play the same url. Prints "port N" once listening.

import { LiveSource, type RelayedMedia } from "../src/ingest/liveSource";
import { RtmpServer, type RtmpServerConnection } from "../src/rtmp";

const sources = new Map<string, LiveSource>();

const reader = (connection: RtmpServerConnection) => ({
  sendMedia: (media: RelayedMedia) => connection.sendMedia(media),
  endPlay: () => connection.endPlay(),
  cut: () => connection.close(),
  get bufferedBytes() {
    return connection.bufferedBytes;
  },
});

const server = new RtmpServer({
  onPublish: async ({ streamName }) => {
    const source = new LiveSource();
    sources.set(streamName, source);
    return {
      ok: true,
      sink: {
        media: (m) => (m.kind === "data" ? source.pushData(m.timestamp, m.name, m.values) : source.push({ kind: m.kind, timestamp: m.timestamp, body: m.body })),
        end: () => {
          source.end();
          if (sources.get(streamName) === source) sources.delete(streamName);
        },
      },
    };
  },
  onPlay: async ({ streamName, connection }) => {
    const r = reader(connection);
    const started = () => {
      const source = sources.get(streamName);
      if (source) source.add(r);
      else r.endPlay();
    };
    return { ok: true, reader: { started, end: () => sources.get(streamName)?.remove(r) } };
  },
});

void server.listen(0, "127.0.0.1").then((port) => console.log(`port ${port}`));
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void server.close().then(() => process.exit(0)));
