import fs from "node:fs";
import path from "node:path";
import { AREAS, type Area, type Declaration } from "./declare";
import { RULES } from "./index";
import { SETTINGS } from "./settings";

// The operator's settings reference, docs/settings.md, made from the declarations: `npm run
// docs:settings` writes it, and a unit test fails while the file differs from what this makes.

export const REFERENCE_FILE = path.resolve(__dirname, "../../docs/settings.md");

const cell = (text: string) => text.replace(/\|/g, "\\|");
const anchor = (title: string) =>
  "#" +
  title
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, "")
    .replace(/ /g, "-");

/** docs/settings.md as the declarations make it. */
export function settingsReference(): string {
  const declarations = Object.values(SETTINGS) as Declaration[];
  const byArea = (Object.keys(AREAS) as Area[])
    .map((area) => ({ area, title: AREAS[area], settings: declarations.filter((d) => d.area === area) }))
    .filter((a) => a.settings.length > 0);
  const lines = [
    "# Settings",
    "",
    "<!-- Made by `npm run docs:settings` from the declarations in src/config/settings/: edit those, then run it. -->",
    "",
    "onair reads every setting from its environment, once, at start-up. An unset or empty variable takes the default.",
    "A value that is not allowed stops the start with one line per problem, each naming its variable; every problem is listed at once.",
    "",
    ...byArea.map((a) => `- [${a.title}](${anchor(a.title)})`),
    "- [Settings that go together](#settings-that-go-together)",
  ];
  for (const a of byArea) {
    lines.push("", `## ${a.title}`, "", "| Variable | Default | Allowed | Meaning |", "|---|---|---|---|");
    for (const d of a.settings) lines.push(`| \`${d.env}\` | ${cell(d.default)} | ${cell(d.allowed)} | ${cell(d.doc)} |`);
  }
  lines.push("", "## Settings that go together", "", ...RULES.map((r) => `- ${r.doc}`), "");
  return lines.join("\n");
}

if (require.main === module) {
  fs.mkdirSync(path.dirname(REFERENCE_FILE), { recursive: true });
  fs.writeFileSync(REFERENCE_FILE, settingsReference());
  process.stdout.write(`wrote ${path.relative(process.cwd(), REFERENCE_FILE)}\n`);
}
