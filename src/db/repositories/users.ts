import { statementCache, type Db } from "../connection";
import { newId } from "../ids";

export interface UserRecord {
  id: string;
  name: string;
  createdAt: number;
}

interface Row {
  id: string;
  name: string;
  created_at: number;
}

const toUser = (r: Row): UserRecord => ({ id: r.id, name: r.name, createdAt: r.created_at });

export class UsersRepository {
  private readonly sql: ReturnType<typeof statementCache>;

  constructor(private readonly db: Db) {
    this.sql = statementCache(db);
  }

  get(id: string): UserRecord | undefined {
    const row = this.sql("SELECT * FROM users WHERE id = ?").get(id) as Row | undefined;
    return row && toUser(row);
  }

  findByName(name: string): UserRecord | undefined {
    const row = this.sql("SELECT * FROM users WHERE name = ?").get(name) as Row | undefined;
    return row && toUser(row);
  }

  /** The named user, created on first use (the CLI's `keys create <user>`). */
  getOrCreate(name: string): UserRecord {
    const user: UserRecord = { id: newId(), name, createdAt: Date.now() };
    this
      .sql("INSERT INTO users (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT(name) DO NOTHING")
      .run(user.id, user.name, user.createdAt);
    return this.findByName(name)!;
  }

  count(): number {
    return (this.sql("SELECT COUNT(*) AS n FROM users").get() as { n: number }).n;
  }
}
