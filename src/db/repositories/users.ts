import type { Sql } from "../sql";
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
  constructor(private readonly q: Sql) {}

  async get(id: string): Promise<UserRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM users WHERE id = ?", [id]);
    return row && toUser(row);
  }

  async findByName(name: string): Promise<UserRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM users WHERE name = ?", [name]);
    return row && toUser(row);
  }

  /** The named user, created on first use (the CLI's `keys create <user>`). */
  async getOrCreate(name: string): Promise<UserRecord> {
    const user: UserRecord = { id: newId(), name, createdAt: Date.now() };
    await this.q.run("INSERT INTO users (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT(name) DO NOTHING", [user.id, user.name, user.createdAt]);
    return (await this.findByName(name))!;
  }

  async count(): Promise<number> {
    return (await this.q.get<{ n: number }>("SELECT COUNT(*) AS n FROM users"))!.n;
  }
}
