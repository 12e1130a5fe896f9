import fs from "node:fs";
import { REFERENCE_FILE, settingsReference } from "../../../src/config/reference";
import { SETTINGS } from "../../../src/config/settings";

describe("docs/settings.md", () => {
  it("is what the declarations make (else run `npm run docs:settings`)", () => {
    const written = fs.existsSync(REFERENCE_FILE) ? fs.readFileSync(REFERENCE_FILE, "utf8") : "";
    const made = settingsReference();
    if (written !== made) {
      const a = written.split("\n");
      const b = made.split("\n");
      const line = Array.from({ length: Math.max(a.length, b.length) }, (_, i) => i).find((i) => a[i] !== b[i])!;
      throw new Error(
        `docs/settings.md differs from the settings' declarations (line ${line + 1} is ${JSON.stringify(a[line] ?? null)}, the declarations make ${JSON.stringify(b[line] ?? null)}): run \`npm run docs:settings\` and commit the result`,
      );
    }
  });

  it("lists every setting, with a doc line", () => {
    const made = settingsReference();
    for (const [env, d] of Object.entries(SETTINGS)) {
      expect(made).toContain(`| \`${env}\` |`);
      expect(d.doc.trim()).not.toBe("");
    }
  });
});
