// Roster: the set of open connections kept in a dense array (src/lib/roster.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Roster, RosterEntry } from '../../../src/lib/roster.js';
import { promotedBy } from './promotion.js';

class Item extends RosterEntry {
  constructor(readonly name: string) { super(); }
}

const names = (r: Roster<Item>): string[] => r.members().map((e) => e.name).sort();

test('members join and leave in any order; the last one fills a gap', () => {
  const r = new Roster<Item>();
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => new Item(n)) as [Item, Item, Item, Item];
  for (const e of [a, b, c, d]) r.add(e);
  assert.equal(r.size, 4);
  r.remove(b);
  assert.deepEqual(names(r), ['a', 'c', 'd']);
  assert.equal(b.rosterIndex, -1);
  assert.equal(d.rosterIndex, 1, 'the last member took the place left');
  r.remove(d);
  r.remove(a);
  assert.deepEqual(names(r), ['c']);
  assert.equal(c.rosterIndex, 0);
  r.remove(c);
  assert.equal(r.size, 0);
  assert.deepEqual(r.members(), []);
});

test('adding a member twice or removing a stranger changes nothing', () => {
  const r = new Roster<Item>();
  const other = new Roster<Item>();
  const a = new Item('a');
  const x = new Item('x');
  r.add(a);
  r.add(a);
  assert.equal(r.size, 1);
  r.remove(x);
  other.add(x);
  r.remove(x);
  assert.equal(x.rosterIndex, 0, "another roster's member keeps its place there");
  assert.deepEqual(names(r), ['a']);
  r.remove(a);
  r.remove(a);
  assert.equal(r.size, 0);
});

test('members() is a copy: members may leave while it is gone through', () => {
  const r = new Roster<Item>();
  const items = Array.from({ length: 10 }, (_, i) => new Item(String(i)));
  for (const e of items) r.add(e);
  const seen: string[] = [];
  for (const e of r.members()) { seen.push(e.name); r.remove(e); }
  assert.equal(seen.length, 10);
  assert.equal(new Set(seen).size, 10);
  assert.equal(r.size, 0);
});

test('count() counts the members a test accepts', () => {
  const r = new Roster<Item>();
  for (const n of ['a', 'bb', 'cc', 'd']) r.add(new Item(n));
  assert.equal(r.count((e) => e.name.length === 2), 2);
  assert.equal(r.count(() => false), 0);
});

test('churn: a thousand joins and leaves leave exactly the members still in', () => {
  const r = new Roster<Item>();
  const live = new Set<Item>();
  let seed = 7;
  const rnd = (): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  for (let i = 0; i < 1000; i++) {
    if (live.size > 0 && rnd() < 0.5) {
      const all = [...live];
      const e = all[Math.floor(rnd() * all.length)]!;
      r.remove(e);
      live.delete(e);
    } else {
      const e = new Item(String(i));
      r.add(e);
      live.add(e);
    }
  }
  assert.equal(r.size, live.size);
  assert.deepEqual(names(r), [...live].map((e) => e.name).sort());
  for (const e of r.members()) assert.equal(r.members()[e.rosterIndex], e);
});

test('members that left are not kept alive through scavenges (a Set churned the same way is)', () => {
  class Conn extends RosterEntry {
    readonly body = new Array<number>(50).fill(1);
  }
  const roster = new Roster<Conn>();
  const set = new Set<Conn>();
  // 40 scavenges; between two of them 500 connections open, 50 at a time.
  const churn = (join: (c: Conn) => void, leave: (c: Conn) => void) => {
    const open: Conn[] = [];
    return () => {
      for (let k = 0; k < 500; k++) {
        const c = new Conn();
        join(c);
        open.push(c);
        if (open.length > 50) leave(open.shift()!);
      }
    };
  };
  const byRoster = promotedBy(40, churn((c) => roster.add(c), (c) => roster.remove(c)));
  const bySet = promotedBy(40, churn((c) => set.add(c), (c) => set.delete(c)));
  // Measured on Node 20: about 50 KB for the roster (its 50 live members), 6.7 MB for the Set.
  assert.ok(byRoster < 1024 * 1024, `roster churn promoted ${byRoster} bytes (a Set: ${bySet})`);
});
