import { ConfigError, loadConfig } from "../config";
import { openStore } from "../db";

const USAGE = `usage: npm run -s cli -- keys create <user>

  keys create <user>   print a new API key for <user> (created if needed) as the only line on stdout

The database is found through DATA_DIR (default ./storage), as for the server; the server may be running.`;

function run(argv: string[]): number {
  const [group, command, userName, ...rest] = argv;
  if (group === "keys" && command === "create" && userName && rest.length === 0) {
    const name = userName.trim();
    if (!name || name.length > 200) {
      process.stderr.write("onair cli: the user name must be 1-200 characters\n");
      return 2;
    }
    const store = openStore(loadConfig().dbPath);
    try {
      const user = store.users.getOrCreate(name);
      process.stdout.write(store.apiKeys.create(user.id) + "\n");
      return 0;
    } finally {
      store.close();
    }
  }
  process.stderr.write(USAGE + "\n");
  return group === undefined || group === "help" || group === "--help" ? 0 : 2;
}

try {
  process.exitCode = run(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`onair cli: ${err instanceof ConfigError ? err.message : err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
