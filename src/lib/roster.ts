// The open connections of a process, kept without a hash table.
//
// A Set or Map that gains and loses an entry per connection rehashes every few dozen
// connections, and V8 links each table it replaces to its successor (so that an iterator
// still on the old one can follow) while the old one keeps the entries it held. Once one of
// those tables has been promoted to the old generation, it keeps every later table, and the
// connections each held, alive through every scavenge until the next full collection: under
// one-request connections that was most of what each scavenge copied and promoted. A Roster
// is a dense array instead: a member records its place, and leaving moves the last member
// into the gap. Nothing points from a dead member or a dead array to a live one.

/** A member of one Roster (extend it with what the roster's owner needs per member). */
export class RosterEntry {
  /** Its place in the roster; -1 when not in one. */
  rosterIndex = -1;
}

export class Roster<E extends RosterEntry> {
  private readonly list: E[] = [];

  get size(): number { return this.list.length; }

  /** Adds `e` (nothing when it is in a roster already). */
  add(e: E): void {
    if (e.rosterIndex !== -1) return;
    e.rosterIndex = this.list.length;
    this.list.push(e);
  }

  /** Removes `e` (nothing when it is not in this roster). */
  remove(e: E): void {
    const i = e.rosterIndex;
    if (i < 0 || this.list[i] !== e) return;
    const last = this.list.pop()!;
    if (last !== e) {
      this.list[i] = last;
      last.rosterIndex = i;
    }
    e.rosterIndex = -1;
  }

  /** The members now, in no particular order: a copy, so the caller may add and remove while
   *  going through it. */
  members(): E[] {
    return this.list.slice();
  }

  /** How many members `test` accepts (it must not add or remove). */
  count(test: (e: E) => boolean): number {
    let n = 0;
    for (let i = 0; i < this.list.length; i++) if (test(this.list[i]!)) n++;
    return n;
  }
}
