import fs from "node:fs";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { DeleteObjectsCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import type { Logger } from "../log";
import { parseMediaPlaylist } from "../media";
import type { RecordingStore, StoredFile } from "./recordingStore";

export interface S3Settings {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Path-style URLs (http://host/bucket/key): what MinIO, Garage, Ceph and s3rver expect. */
  forcePathStyle: boolean;
}

const TYPES: Record<string, string> = {
  ".m3u8": "application/vnd.apple.mpegurl",
  ".m4s": "video/mp4",
  ".mp4": "video/mp4",
  ".ts": "video/mp2t",
  ".jpg": "image/jpeg",
};

/** Tries per upload (Owncast's choice too): a blip of the object store costs a retry, not a file. */
const ATTEMPTS = 4;
/** Above this, the MP4 goes up in parts (lib-storage's Upload), 8 MiB each. */
const MULTIPART_BYTES = 16 * 1024 * 1024;

export function s3Client(s: S3Settings): S3Client {
  return new S3Client({
    endpoint: s.endpoint,
    region: s.region,
    forcePathStyle: s.forcePathStyle,
    credentials: { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey },
    // Only when an operation needs one: the SDK's default sends streamed bodies aws-chunked
    // with a trailing checksum, which some S3-compatible servers store framing and all.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}

/** Names of onair's own making (segments, inits): nothing a playlist names climbs out of its folder. */
const isSegmentFileName = (uri: string) => /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,79}$/.test(uri);

function isNotFound(err: unknown): boolean {
  const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return status === 404 || (err as Error).name === "NotFound" || (err as Error).name === "NoSuchKey";
}

function isBadRange(err: unknown): boolean {
  const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return status === 416 || (err as Error).name === "InvalidRange";
}

/** A key's prefix for one session's recording. */
export const recordingPrefix = (sessionId: string) => `recordings/${sessionId}/`;

/**
 * Recordings in an S3-compatible bucket (S3_ENDPOINT, S3_BUCKET): uploads in order per session,
 * each retried, timed (`onUpload` hears each one's milliseconds: the metrics, the benchmark).
 */
export class S3RecordingStore implements RecordingStore {
  readonly kind = "s3" as const;
  private readonly chains = new Map<string, Promise<void>>();

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    /** The session's local folder (`DATA_DIR/recordings/<id>`). */
    private readonly dirOf: (sessionId: string) => string,
    private readonly log: Logger,
    private readonly onUpload?: (ms: number, bytes: number) => void,
    /** Where an id's files are kept in the bucket: recordings by default; clips (src/assets) use `assets/<id>/`. */
    private readonly prefixOf: (id: string) => string = recordingPrefix,
  ) {}

  saved(sessionId: string, files: string[]): Promise<void> {
    return this.inOrder(sessionId, async () => {
      for (const file of files) {
        try {
          await this.upload(sessionId, file);
        } catch (err) {
          this.log.error({ err, sessionId, file }, "could not copy a recording file to the object store; it stays on this node only");
        }
      }
    });
  }

  put(sessionId: string, files: string[]): Promise<void> {
    return this.inOrder(sessionId, async () => {
      for (const file of files) await this.upload(sessionId, file);
    });
  }

  /** One session's uploads one after another, in the order asked. */
  private inOrder(sessionId: string, work: () => Promise<void>): Promise<void> {
    const previous = this.chains.get(sessionId) ?? Promise.resolve();
    const next = previous.then(work);
    const settled = next.catch(() => undefined);
    this.chains.set(sessionId, settled);
    void settled.then(() => {
      if (this.chains.get(sessionId) === settled) this.chains.delete(sessionId);
    });
    return next;
  }

  private async upload(sessionId: string, file: string): Promise<void> {
    const local = path.join(this.dirOf(sessionId), file);
    const key = this.prefixOf(sessionId) + file.split(path.sep).join("/");
    const type = TYPES[path.extname(file)] ?? "application/octet-stream";
    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      try {
        const size = (await fs.promises.stat(local)).size;
        if (size > MULTIPART_BYTES) {
          await new Upload({ client: this.client, params: { Bucket: this.bucket, Key: key, Body: fs.createReadStream(local), ContentType: type }, partSize: 8 * 1024 * 1024, queueSize: 2 }).done();
        } else {
          // A buffer: the length is known, so no chunked encoding at all.
          await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: await fs.promises.readFile(local), ContentType: type, CacheControl: type.includes("mpegurl") ? "no-cache" : "max-age=86400" }));
        }
        this.onUpload?.(performance.now() - started, size);
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT" || attempt >= ATTEMPTS) throw err;
        await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
      }
    }
  }

  private async keys(sessionId: string): Promise<{ key: string; size: number }[]> {
    const prefix = this.prefixOf(sessionId);
    const out: { key: string; size: number }[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const o of page.Contents ?? []) if (o.Key) out.push({ key: o.Key, size: o.Size ?? 0 });
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  /**
   * Read from the playlists down, never by listing the bucket: a playlist names only files
   * uploaded before it, so what it names is there (a listing would also show whatever a dead
   * node's cut-off upload left behind).
   */
  async fetch(sessionId: string, localDir: string, renditions: number[]): Promise<void> {
    const files = ["index.m3u8"];
    for (const i of renditions) {
      const playlist = await this.text(sessionId, `${i}/index.m3u8`);
      if (playlist === undefined) continue;
      const named = new Set<string>();
      for (const s of parseMediaPlaylist(playlist).segments) {
        if (isSegmentFileName(s.uri)) named.add(s.uri);
        if (s.map && isSegmentFileName(s.map)) named.add(s.map);
      }
      files.push(...[...named].map((f) => `${i}/${f}`), `${i}/index.m3u8`);
    }
    for (const file of files) {
      const local = path.join(localDir, ...file.split("/"));
      if (fs.existsSync(local) && !file.endsWith(".m3u8")) continue;
      const got = await this.open(sessionId, localDir, file);
      if (!got) continue;
      await fs.promises.mkdir(path.dirname(local), { recursive: true });
      const tmp = `${local}.${process.pid}.part`;
      await pipeline(got.body, fs.createWriteStream(tmp));
      await fs.promises.rename(tmp, local);
    }
  }

  private async text(sessionId: string, file: string): Promise<string | undefined> {
    const got = await this.open(sessionId, "", file);
    if (!got) return undefined;
    const chunks: Buffer[] = [];
    for await (const c of got.body) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }

  /** The master copy or the first rendition's playlist: written once anything was recorded. */
  async exists(sessionId: string, localDir: string): Promise<boolean> {
    if (fs.existsSync(localDir)) return true;
    for (const key of ["index.m3u8", "0/index.m3u8"]) {
      try {
        await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.prefixOf(sessionId) + key }));
        return true;
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    return false;
  }

  async open(sessionId: string, _localDir: string, file: string, range?: string): Promise<StoredFile | undefined> {
    const key = this.prefixOf(sessionId) + file;
    try {
      const got = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: range }));
      return { body: got.Body as Readable, size: got.ContentLength, range: got.ContentRange };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      // A Range the object cannot satisfy (or the bucket cannot read): the whole file, as a
      // server may answer any Range (RFC 9110 §14.2), rather than an error for a player's seek.
      if (range !== undefined && isBadRange(err)) return this.open(sessionId, _localDir, file);
      throw err;
    }
  }

  async delete(sessionId: string, localDir: string): Promise<void> {
    await fs.promises.rm(localDir, { recursive: true, force: true });
    const objects = await this.keys(sessionId);
    for (let i = 0; i < objects.length; i += 1000) {
      const batch = objects.slice(i, i + 1000).map((o) => ({ Key: o.key }));
      await this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: batch, Quiet: true } }));
    }
  }
}

