import crypto from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";

// One way to hand ffmpeg an input a tenant chose (a pull source, an SRT listener's caller, what a
// WHIP publisher sends): ffmpeg reads nothing else. For each kind the demuxer is fixed by a format
// whitelist (no concat, dash, imf or image sequence: those open further urls of their own choosing)
// and the protocols by a protocol whitelist; both are copied by ffmpeg onto every nested open.
// The url and its options, which may hold secrets (a password, a signed query, an SRT passphrase),
// never reach argv (`/proc/<pid>/cmdline` is readable by every local user): they go into a small
// ffconcat script of mode 0600 in a folder of mode 0700, which ffmpeg's concat demuxer opens as
// its one entry, with the whitelists and options applied to that open. See
// docs/architecture.md#one-trust-boundary.

/** What an input is, which fixes what ffmpeg may do with it. */
export type InputKind =
  /** rtmp(s)://: the rtmp protocol delivers FLV. */
  | "rtmp"
  | "rtmps"
  /** rtsp://, interleaved over TCP. */
  | "rtsp"
  /** srt:// (caller or listener), MPEG-TS. */
  | "srt"
  /** http:// on loopback, onair's source gateway: HLS playlists or media files over HTTP. */
  | "gateway";

interface KindRules {
  /** ffmpeg demuxers the input (and anything nested in it) may be read with. */
  formats: string;
  /** ffmpeg protocols it may open. */
  protocols: string;
}

/**
 * Demuxer and protocol names per kind (ffmpeg 5.1 names). The gateway's media: HLS, MPEG-TS, fMP4
 * and MP4 (`mov`), FLV, ADTS AAC, MP3, Matroska/WebM, and WebVTT renditions an HLS master may
 * name. `crypto` is HLS's AES-128, whose keys come through the gateway like everything else.
 */
export const INPUT_RULES: Readonly<Record<InputKind, KindRules>> = {
  rtmp: { formats: "flv,live_flv", protocols: "rtmp,tcp" },
  rtmps: { formats: "flv,live_flv", protocols: "rtmps,tcp,tls" },
  rtsp: { formats: "rtsp,sdp", protocols: "rtsp,rtp,tcp,udp" },
  srt: { formats: "mpegts", protocols: "srt,udp" },
  gateway: { formats: "hls,mpegts,mov,flv,live_flv,aac,mp3,matroska,webm,webvtt", protocols: "http,tcp,crypto" },
};

export interface UntrustedInput {
  kind: InputKind;
  /** The url ffmpeg opens; may hold secrets. */
  url: string;
  /** Options of that open (demuxer and protocol AVOptions: timeouts, a passphrase); may hold secrets. */
  options?: Record<string, string>;
}

/** A token of the ffconcat script, quoted: `'…'`, a quote inside as `'\''` (av_get_token's rules). */
export function ffconcatQuote(value: string): string {
  return `'${value.replace(/'/g, "'\\''")}'`;
}

/**
 * The ffconcat script naming one input (pure). Every value is quoted; a line break in one would
 * end its line and start a directive of the tenant's choosing, so it is refused.
 */
export function inputScript(input: UntrustedInput): string {
  const rules = INPUT_RULES[input.kind];
  const options: Array<[string, string]> = [
    // Applied to the entry's open, after ffmpeg copies the outer whitelists onto it: the entry
    // gets its own kind's demuxers and protocols, not the outer `concat` and `file`.
    ["format_whitelist", rules.formats],
    ["protocol_whitelist", rules.protocols],
    ...Object.entries(input.options ?? {}),
  ];
  for (const v of [input.url, ...options.flat()]) {
    if (/[\r\n\0]/.test(v)) throw new Error("an ffmpeg input or option holds a line break or NUL: refused");
  }
  if (!options.every(([k]) => /^[a-z_][a-z0-9_]*$/i.test(k))) throw new Error("an ffmpeg option name is not a plain word");
  return ["ffconcat version 1.0", `file ${ffconcatQuote(input.url)}`, ...options.map(([k, v]) => `option ${k} ${ffconcatQuote(v)}`), ""].join("\n");
}

/**
 * The ffmpeg options that read an input from its script (pure): options that belong before
 * `-i` of the outer open (`-re`, say) go in `before`. The concat demuxer runs in safe mode off
 * (its one entry is a url, which safe mode refuses) and without auto_convert (the packets go
 * through as the entry's demuxer gives them).
 */
export function inputArgs(scriptPath: string, before: readonly string[] = []): string[] {
  return ["-f", "concat", "-safe", "0", "-auto_convert", "0", "-format_whitelist", "concat", "-protocol_whitelist", "file", ...before, "-i", scriptPath];
}

/**
 * The folder the scripts live in, mode 0700, one file of mode 0600 per run of an ffmpeg, removed
 * when it ends (and every leftover at start: a crash leaves some).
 */
export class InputScripts {
  private ready: Promise<void> | undefined;

  constructor(private readonly dir: string) {}

  /** Writes the input's script; resolves to the ffmpeg options reading it and a remover. */
  async write(input: UntrustedInput, before: readonly string[] = []): Promise<{ args: string[]; remove(): Promise<void> }> {
    const text = inputScript(input);
    await (this.ready ??= this.prepare());
    const file = path.join(this.dir, `${crypto.randomBytes(12).toString("hex")}.ffconcat`);
    await fs.writeFile(file, text, { mode: 0o600, flag: "wx" });
    return { args: inputArgs(file, before), remove: () => fs.rm(file, { force: true }) };
  }

  private async prepare(): Promise<void> {
    // Removed and made anew: what is left is from a run that ended without cleaning up, and the
    // mode is set even if someone loosened it.
    await fs.rm(this.dir, { recursive: true, force: true });
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    await fs.chmod(this.dir, 0o700);
  }
}
