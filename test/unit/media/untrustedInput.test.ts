import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ffconcatQuote, inputArgs, InputScripts, inputScript } from "../../../src/media/untrustedInput";

describe("ffconcatQuote", () => {
  it.each([
    ["plain", "'plain'"],
    ["it's", "'it'\\''s'"],
    ["a b\\c", "'a b\\c'"],
    ["", "''"],
  ])("%j → %s", (value, quoted) => {
    expect(ffconcatQuote(value)).toBe(quoted);
  });
});

describe("inputScript", () => {
  it("names the url once, then the kind's whitelists, then the options", () => {
    expect(inputScript({ kind: "srt", url: "srt://0.0.0.0:9000?mode=listener", options: { passphrase: "p'ss word" } }).split("\n")).toEqual([
      "ffconcat version 1.0",
      "file 'srt://0.0.0.0:9000?mode=listener'",
      "option format_whitelist 'mpegts'",
      "option protocol_whitelist 'srt,udp'",
      "option passphrase 'p'\\''ss word'",
      "",
    ]);
  });

  it.each([
    ["rtmp", "flv"],
    ["rtsp", "rtsp"],
    ["gateway", "hls"],
  ] as const)("%s reads with %s and never concat, dash or image sequences", (kind, format) => {
    const formats = /option format_whitelist '([^']*)'/.exec(inputScript({ kind, url: "x" }))![1]!.split(",");
    expect(formats).toContain(format);
    for (const open of ["concat", "dash", "imf", "image2", "ffconcat"]) expect(formats).not.toContain(open);
  });

  it.each([
    ["a line break in the url", { url: "srt://h:1\nfile 'x'" }],
    ["a NUL in an option", { url: "srt://h:1", options: { passphrase: "a\0b" } }],
    ["a CR in an option", { url: "srt://h:1", options: { passphrase: "a\rb" } }],
    ["an option name that is not a word", { url: "srt://h:1", options: { "x y": "1" } }],
  ])("refuses %s", (_what, input) => {
    expect(() => inputScript({ kind: "srt", ...input })).toThrow();
  });
});

describe("inputArgs", () => {
  it("reads the script with concat alone, and the file protocol alone, outside", () => {
    expect(inputArgs("/d/a.ffconcat", ["-re"])).toEqual([
      "-f", "concat", "-safe", "0", "-auto_convert", "0", "-format_whitelist", "concat", "-protocol_whitelist", "file", "-re", "-i", "/d/a.ffconcat",
    ]);
  });
});

describe("InputScripts", () => {
  it("writes each script 0600 in a 0700 folder, clears leftovers first, removes on request", async () => {
    const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "onair-inputs-")), "inputs");
    fs.mkdirSync(dir, { mode: 0o755 });
    fs.writeFileSync(path.join(dir, "leftover.ffconcat"), "x");
    const scripts = new InputScripts(dir);
    const { args, remove } = await scripts.write({ kind: "srt", url: "srt://h:1", options: { passphrase: "secret-passphrase" } });
    const file = args.at(-1)!;
    expect(fs.readdirSync(dir)).toEqual([path.basename(file)]);
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(file, "utf8")).toContain("secret-passphrase");
    expect(args.join(" ")).not.toContain("secret-passphrase");
    await remove();
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});
