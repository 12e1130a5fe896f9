import { ConfigError, databaseLocation, loadConfig } from "../config";
import { openStore, type Store } from "../db";

const USAGE = `usage: npm run -s cli -- keys create <user> | keys list [<user>] | keys revoke <id>

  keys create <user>   print a new API key for <user> (created if needed) as the only line on stdout
                       (its id, for keys list and revoke, goes to stderr)
  keys list [<user>]   one line per key: its id, its user and when it was created (keys themselves
                       are stored only as hashes and cannot be shown again)
  keys revoke <id>     revoke a key: requests with it are refused with 401 at once

The database is found through DATA_DIR (default ./storage), as for the server; the server may be running.`;

async function withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(databaseLocation(loadConfig()));
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

async function run(argv: string[]): Promise<number> {
  const [group, command, userName, ...rest] = argv;
  if (group === "keys" && command === "list" && rest.length === 0) {
    const keys = await withStore((store) => store.apiKeys.list(userName));
    for (const k of keys) process.stdout.write(`${k.id}  ${k.userName}  ${new Date(k.createdAt).toISOString()}\n`);
    if (keys.length === 0) process.stderr.write(userName ? `onair cli: user "${userName}" has no API keys\n` : "onair cli: no API keys\n");
    return 0;
  }
  if (group === "keys" && command === "revoke" && userName && rest.length === 0) {
    if (!(await withStore((store) => store.apiKeys.revoke(userName)))) {
      process.stderr.write(`onair cli: no API key with id ${userName} (see keys list)\n`);
      return 1;
    }
    process.stderr.write(`onair cli: key ${userName} revoked\n`);
    return 0;
  }
  if (group === "keys" && command === "create" && userName && rest.length === 0) {
    const name = userName.trim();
    if (!name || name.length > 200) {
      process.stderr.write("onair cli: the user name must be 1-200 characters\n");
      return 2;
    }
    const key = await withStore(async (store) => {
      const created = await store.apiKeys.create((await store.users.getOrCreate(name)).id);
      process.stderr.write(`onair cli: key ${await store.apiKeys.idForKey(created)} created for ${name}\n`);
      return created;
    });
    process.stdout.write(key + "\n");
    return 0;
  }
  process.stderr.write(USAGE + "\n");
  return group === undefined || group === "help" || group === "--help" ? 0 : 2;
}

run(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    process.stderr.write(`onair cli: ${err instanceof ConfigError ? err.message : err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
