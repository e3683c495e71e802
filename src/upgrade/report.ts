// How plume upgrade shows its results: findings as text or JSON, and a unified diff.

import type { Finding } from './model.js';

export function formatText(findings: readonly Finding[]): string {
  let out = '';
  for (const f of findings) {
    out += `${f.file}:${f.line}: ${f.severity} [${f.rule}] ${f.message}\n`;
    if (f.before) out += indent('before', f.before);
    if (f.after) out += indent(f.severity === 'manual' ? 'todo' : 'after', f.after);
  }
  return out;
}

function indent(label: string, text: string): string {
  const lines = text.split('\n');
  return lines.map((l, i) => `    ${i === 0 ? `${label}:`.padEnd(8) : ' '.repeat(8)}${l}`).join('\n') + '\n';
}

export function summary(findings: readonly Finding[], changedFiles: number): string {
  const n = (s: string): number => findings.filter((f) => f.severity === s).length;
  return `${findings.length} finding(s): ${n('change')} change, ${n('manual')} manual, ${n('note')} note; ${changedFiles} file(s) ${changedFiles === 1 ? 'changes' : 'change'}.\n`;
}

export function formatJson(findings: readonly Finding[]): string {
  return JSON.stringify(findings.map((f) => ({
    file: f.file, line: f.line, rule: f.rule, severity: f.severity, message: f.message, before: f.before, after: f.after,
  })), null, 2) + '\n';
}

// ---- unified diff (Myers) ----------------------------------------------------------------------

type Op = { k: '=' | '-' | '+'; line: string };

function diffLines(a: readonly string[], b: readonly string[]): Op[] {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  const v = new Int32Array(2 * max + 2);
  const trace: Int32Array[] = [];
  let done = false;
  for (let d = 0; d <= max && !done; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[max + k - 1]! < v[max + k + 1]!) ? v[max + k + 1]! : v[max + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) { x++; y++; }
      v[max + k] = x;
      if (x >= n && y >= m) { done = true; break; }
    }
  }
  // Backtrack.
  const ops: Op[] = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0 && (x > 0 || y > 0); d--) {
    const vv = trace[d]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && vv[max + k - 1]! < vv[max + k + 1]!) ? k + 1 : k - 1;
    const prevX = vv[max + prevK]!;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) { ops.push({ k: '=', line: a[x - 1]! }); x--; y--; }
    if (d === 0) break;
    if (x === prevX) { ops.push({ k: '+', line: b[y - 1]! }); y--; } else { ops.push({ k: '-', line: a[x - 1]! }); x--; }
  }
  while (x > 0 && y > 0) { ops.push({ k: '=', line: a[x - 1]! }); x--; y--; }
  return ops.reverse();
}

function splitKeep(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** A unified diff of two versions of a file (3 lines of context). */
export function unifiedDiff(oldText: string, newText: string, oldName: string, newName: string): string {
  const a = splitKeep(oldText);
  const b = splitKeep(newText);
  const ops = diffLines(a, b);
  if (!ops.some((o) => o.k !== '=')) return '';
  let out = `--- ${oldName}\n+++ ${newName}\n`;
  const ctx = 3;
  let i = 0;
  let ai = 0;
  let bi = 0;
  // Positions of each op in a and b.
  const pos: { a: number; b: number }[] = [];
  for (const o of ops) { pos.push({ a: ai, b: bi }); if (o.k !== '+') ai++; if (o.k !== '-') bi++; }
  while (i < ops.length) {
    while (i < ops.length && ops[i]!.k === '=') i++;
    if (i >= ops.length) break;
    let start = Math.max(0, i - ctx);
    let end = i;
    for (;;) {
      while (end < ops.length && ops[end]!.k !== '=') end++;
      let eq = end;
      while (eq < ops.length && ops[eq]!.k === '=') eq++;
      if (eq < ops.length && eq - end <= 2 * ctx) { end = eq; continue; }
      end = Math.min(ops.length, end + ctx);
      break;
    }
    const hunk = ops.slice(start, end);
    const aStart = pos[start]!.a;
    const bStart = pos[start]!.b;
    const aLen = hunk.filter((o) => o.k !== '+').length;
    const bLen = hunk.filter((o) => o.k !== '-').length;
    out += `@@ -${aLen === 0 ? aStart : aStart + 1},${aLen} +${bLen === 0 ? bStart : bStart + 1},${bLen} @@\n`;
    for (const o of hunk) out += `${o.k === '=' ? ' ' : o.k}${o.line}\n`;
    i = end;
    start = end;
  }
  return out;
}
