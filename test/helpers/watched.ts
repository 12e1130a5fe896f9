import { startReceiver, type Receiver } from "./receiver";
import { apiClient, startTestServer, type Api, type TestServer } from "./server";

/** A webhook body as tests read it. */
export interface EventBody {
  id: string;
  event: string;
  stream: { id: string };
  payload: { sessionId: string } & Record<string, unknown>;
}

export interface WatchedServer {
  t: TestServer;
  api: Api;
  rx: Receiver;
  /** Event bodies in arrival order. */
  received(): EventBody[];
  /** Names of the events of one stream, in arrival order. */
  eventsOf(streamId: string): string[];
  stop(): Promise<void>;
}

/** A real server whose first user has a webhook (for `events`, or all) to a real local receiver. */
export async function startWatchedServer(env: Record<string, string>, events?: string[], options: { dataDir?: string } = {}): Promise<WatchedServer> {
  const rx = await startReceiver(() => 204);
  const t = await startTestServer(env, options);
  const api = apiClient(t.apiUrl, t.key);
  await api("POST", "/webhook", { name: "test receiver", url: rx.url, ...(events ? { events } : {}) });
  const received = () => rx.received.map((r) => r.body as EventBody);
  return {
    t,
    api,
    rx,
    received,
    eventsOf: (streamId) => received().filter((e) => e.stream.id === streamId).map((e) => e.event),
    stop: async () => {
      await t.stop();
      await rx.close();
    },
  };
}

/**
 * A watched server for the tests of one file: started before them, stopped after. `api`,
 * `received` and `eventsOf` may be taken apart at once; `t` is the server itself.
 */
export function useWatchedServer(env: Record<string, string>, events?: string[]) {
  let w: WatchedServer | undefined;
  beforeAll(async () => {
    w = await startWatchedServer(env, events);
  });
  afterAll(() => w?.stop());
  return {
    get t(): TestServer {
      return w!.t;
    },
    api: ((...args) => w!.api(...args)) as Api,
    received: () => w!.received(),
    eventsOf: (streamId: string) => w!.eventsOf(streamId),
  };
}
