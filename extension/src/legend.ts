// The lane legend: one compact line however many lanes a Plan has. Lane names share their structure
// ("machine 0 / thread 3"), so what every lane has in common is written once ("machine 0 / thread") and each
// swatch carries only what differs ("3"); the full name is the swatch's tooltip.
import { h } from "./dom.js";
import { LANE_COLORS } from "./draw.js";

interface Parts { word: string; num: string }

function parts(lane: string): Parts[] | null {
  const out: Parts[] = [];
  for (const p of lane.split(" / ")) {
    const m = /^(.*?)\s*(\d+)$/.exec(p.trim());
    if (!m) return null;
    out.push({ word: m[1], num: m[2] });
  }
  return out;
}

/** The common head ("machine 0 / thread") and each lane's short label ("3", or "1:3" where machines differ); names
 * of another structure ("cpu compute 0", "cpu tick": flowlab's lane names) share their common leading words. */
export function laneLabels(lanes: string[]): { head: string; short: string[] } {
  const parsed = lanes.map(parts);
  const n = parsed[0]?.length ?? 0;
  if (!lanes.length || parsed.some((p) => !p || p.length !== n)) return commonWords(lanes);
  const ps = parsed as Parts[][];
  const head: string[] = [], varying: number[] = [];
  for (let i = 0; i < n; i++) {
    const same = ps.every((p) => p[i].word === ps[0][i].word);
    if (!same) return { head: "", short: lanes.slice() };
    if (ps.every((p) => p[i].num === ps[0][i].num)) head.push(`${ps[0][i].word} ${ps[0][i].num}`.trim());
    else { head.push(ps[0][i].word); varying.push(i); }
  }
  const tail = varying.map((i) => ps[0][i].word).join(":");
  const fixed = head.filter((_, i) => !varying.includes(i));
  return { head: [...fixed, tail].filter(Boolean).join(" / "), short: ps.map((p) => varying.map((i) => p[i].num).join(":")) };
}

/** The leading words every name shares ("cpu", "machine 0 / cpu") as the head, where each name keeps some of its own. */
function commonWords(lanes: string[]): { head: string; short: string[] } {
  const words = lanes.map((l) => l.split(" "));
  let k = 0;
  while (words.length > 1 && words.every((w) => w.length > k + 1 && w[k] === words[0][k])) k++;
  return { head: words[0]?.slice(0, k).join(" ") ?? "", short: words.map((w) => w.slice(k).join(" ")) };
}

export function laneLegend(lanes: string[]): HTMLElement {
  const legend = h("span", "fl-lanes");
  const { head, short } = laneLabels(lanes);
  legend.title = lanes.join("\n");
  if (head) legend.append(h("span", "fl-lanes-head", `${head}:`));
  lanes.forEach((lane, i) => {
    const chip = h("span", "fl-lane-chip");
    chip.title = lane;
    const sw = h("span", "fl-swatch");
    sw.style.background = LANE_COLORS[i % LANE_COLORS.length];
    chip.append(sw, h("span", "", short[i]));
    legend.append(chip);
  });
  return legend;
}

/** The diff marks a payload's node classes may carry (flowlab/viz/payload.py, flowlab/notebook/compare.py). */
export const DIFF_MARKS = ["added", "removed", "changed", "out-added", "out-removed", "out-changed"] as const;
const DIFF_WORDS: Record<string, string> = { added: "added", removed: "removed", changed: "changed",
  "out-added": "register added", "out-removed": "register removed", "out-changed": "register changed" };

/** A legend of the diff marks present (one swatch each, drawn as the boxes are), or null when there are none. */
export function diffLegend(marks: string[], counts: Record<string, number> = {}): HTMLElement | null {
  const present = DIFF_MARKS.filter((m) => marks.includes(m));
  if (!present.length) return null;
  const legend = h("span", "fl-diff-legend");
  legend.title = "diff marks: a filled box was added, removed or changed; a dashed outline produces a register that was";
  for (const m of present) {
    const chip = h("span", "fl-diff-chip");
    chip.append(h("span", `fl-diff-swatch c-${m}`), h("span", "", counts[m] !== undefined ? `${DIFF_WORDS[m]} ${counts[m]}` : DIFF_WORDS[m]));
    legend.append(chip);
  }
  return legend;
}
