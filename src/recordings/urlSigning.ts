import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Sql } from "../db";
import { addUriQuery } from "../hls";

// Recording URLs carry a signature: `…/recordings/<sessionId>/output.mp4?sig=<HMAC-SHA256 of the
// session id>`, keyed with a secret only this server knows. A session id travels in webhooks,
// logs and API answers to anyone who may see the session; the recording itself goes only to
// whoever holds the URL the API (or recording.ready) handed out.

/** Where the secret is kept, in DATA_DIR: readable by the operator only. */
export const RECORDING_SECRET_FILE = "recording-url-secret";

/** The query parameter that carries the signature. */
export const SIGNATURE_PARAM = "sig";

/** A signature: base64url of 32 bytes, without padding. */
const SIGNATURE = /^[A-Za-z0-9_-]{43}$/;

export class RecordingUrlSigner {
  constructor(private readonly secret: Buffer) {
    if (secret.length < 32) throw new Error("a recording URL secret has at least 32 bytes");
  }

  /**
   * The secret of `dataDir`, made at the first start (32 random bytes, hex, mode 0600). Every
   * recording URL handed out stays valid while the file does; deleting it makes a new one at
   * the next start, and every URL handed out before stops working.
   */
  static open(dataDir: string): RecordingUrlSigner {
    const file = path.join(dataDir, RECORDING_SECRET_FILE);
    let text: string;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      text = crypto.randomBytes(32).toString("hex");
      // Written aside and renamed: a crash never leaves a half-written secret.
      const tmp = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, text + "\n", { mode: 0o600 });
      fs.renameSync(tmp, file);
    }
    const hex = text.trim();
    if (!/^[0-9a-f]{64,}$/.test(hex)) {
      throw new Error(
        `${file} is not a secret onair wrote (64 hexadecimal characters): restore it, or delete it to have a new one made ` +
          "(every recording URL handed out until now then stops working)",
      );
    }
    return new RecordingUrlSigner(Buffer.from(hex, "hex"));
  }

  /**
   * The secret every node shares, kept in the database (PostgreSQL: nodes have data
   * directories of their own): made by whichever node asks first, read by the others.
   */
  static async shared(db: Sql): Promise<RecordingUrlSigner> {
    await db.run("INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING", [RECORDING_SECRET_FILE, crypto.randomBytes(32).toString("hex")]);
    const row = await db.get<{ value: string }>("SELECT value FROM settings WHERE name = ?", [RECORDING_SECRET_FILE]);
    if (!row || !/^[0-9a-f]{64,}$/.test(row.value)) throw new Error(`the database's ${RECORDING_SECRET_FILE} setting is not a secret onair wrote`);
    return new RecordingUrlSigner(Buffer.from(row.value, "hex"));
  }

  /**
   * A key for another use of the same secret (playback tokens): one secret for the operator to
   * keep (and share between nodes), keys that never coincide with the recordings' signatures.
   */
  deriveKey(label: string): Buffer {
    return crypto.createHmac("sha256", this.secret).update(`onair key: ${label}`).digest();
  }

  /** The signature of a session's recording URLs. */
  sign(sessionId: string): string {
    return crypto.createHmac("sha256", this.secret).update(sessionId).digest("base64url");
  }

  /** Whether `signature` (a query value, anything) is this session's; compared in constant time. */
  verify(sessionId: string, signature: unknown): boolean {
    if (typeof signature !== "string" || !SIGNATURE.test(signature)) return false;
    return crypto.timingSafeEqual(Buffer.from(signature), Buffer.from(this.sign(sessionId)));
  }
}

/**
 * A recording playlist with the signature added to every URI in it (pure): variant playlists in
 * the master, segments in a media playlist, `URI="…"` attributes. Players resolve these relative
 * to the playlist's own URL, query and all dropped, so without this the next request would go
 * unsigned.
 */
export function signPlaylistUris(playlist: string, signature: string): string {
  return addUriQuery(playlist, () => `${SIGNATURE_PARAM}=${signature}`);
}
