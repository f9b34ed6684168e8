// bench/node/sqlite.mjs: bitt on a SQLite file against better-sqlite3 doing
// the same SQL work on a file of its own in the same directory.
//
// What bitt does (core/sqlite/conn.c, commit.c, kv.c), and so what the
// better-sqlite3 side does too:
//   open:  journal_mode=WAL, synchronous=NORMAL, cache_size=-65536 (64 MiB),
//          busy_timeout=5000; bitt's own tables meta and kv (WITHOUT ROWID,
//          the partial expiry index) and the versionstamp row.
//   set:   BEGIN IMMEDIATE; UPDATE meta SET value = value + 1 WHERE name =
//          'versionstamp'; SELECT value FROM meta WHERE name = 'versionstamp';
//          INSERT ... ON CONFLICT (key) DO UPDATE (the upsert with that
//          version, expires_at NULL); COMMIT.
//   get:   SELECT value, kind, version, expires_at FROM kv WHERE key = ?1 AND
//          (expires_at IS NULL OR expires_at > ?2), now bound as ?2; the row
//          comes back as an object (bitt: {key, value, kind, version,
//          expiresAt} with version a bigint; better-sqlite3: its row object
//          with safeIntegers, so version is a bigint there too, as are kind
//          and expires_at).
// The same SQLite: the bitt addon builds in the amalgamation better-sqlite3
// 12.11 bundles (3.53.2; bindings/node/README.md), with libbitt's options
// (core/sqlite/sqlite-defines.txt). The "bare upsert" row does less than
// bitt (autocommit, no versionstamp): a reference for what a set costs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { config, duel, loadPeer, median } from './util.mjs';

const KEYS = 1000;

const DDL = `
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kv (key BLOB PRIMARY KEY, value BLOB NOT NULL, kind INTEGER NOT NULL,
  version INTEGER NOT NULL, expires_at INTEGER) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS kv_expires ON kv (expires_at) WHERE expires_at IS NOT NULL;
INSERT OR IGNORE INTO meta (name, value) VALUES ('versionstamp', 0);`;

function openPeer(file) {
  const Database = loadPeer('better-sqlite3');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('cache_size = -65536');
  db.pragma('busy_timeout = 5000');
  db.exec(DDL);
  const stamp = db.prepare("UPDATE meta SET value = value + 1 WHERE name = 'versionstamp'");
  const stampRead = db
    .prepare("SELECT value FROM meta WHERE name = 'versionstamp'")
    .pluck()
    .safeIntegers();
  const upsert = db.prepare(
    'INSERT INTO kv (key, value, kind, version, expires_at) VALUES (?, ?, ?, ?, ?) ' +
      'ON CONFLICT (key) DO UPDATE SET value = excluded.value, kind = excluded.kind, ' +
      'version = excluded.version, expires_at = excluded.expires_at'
  );
  const select = db
    .prepare(
      'SELECT value, kind, version, expires_at FROM kv WHERE key = ? ' +
        'AND (expires_at IS NULL OR expires_at > ?)'
    )
    .safeIntegers();
  // better-sqlite3's own way to run a function in BEGIN IMMEDIATE ... COMMIT.
  const setTx = db.transaction((key, value) => {
    stamp.run();
    const version = stampRead.get();
    upsert.run(key, value, 0, version, null);
    return version;
  }).immediate;
  let bare = 0n;
  return {
    set: (key, value) => setTx(key, value),
    get: (key) => select.get(key, Date.now()),
    bareSet: (key, value) => upsert.run(key, value, 0, ++bare, null),
    close: () => db.close(),
  };
}

function openBitt(bitt, file) {
  const s = bitt.open(`sqlite:${file}`);
  const kv = s.kv;
  return {
    set: (key, value) => kv.set(key, value),
    get: (key) => kv.get(key),
    close: () => s.close(),
  };
}

const CHUNK = 2000;

// A chunk body: calls op over keys [from, to) of the key set.
const over = (keys, op, value) =>
  op &&
  ((from, to) => {
    for (let i = from; i < to; i++) op(keys[i % KEYS], value);
  });

export async function benchSqlite(bitt) {
  const { n, rounds } = config;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bitt-node-bench-'));
  const keys = Array.from({ length: KEYS }, (_, i) => Buffer.from(`key:${i}`));
  const value = Buffer.alloc(16, 'x');
  const peer = openPeer(path.join(dir, 'peer.db'));
  const mine = bitt ? openBitt(bitt, path.join(dir, 'bitt.db')) : null;
  const got = { bs: [], bg: [], ps: [], pg: [], pb: [] };
  const push = (kb, kp, [b, p]) => {
    got[kb].push(b);
    got[kp].push(p);
  };
  try {
    // Warm up (JIT, statement caches, every key present) before measuring.
    await duel(KEYS, KEYS, over(keys, mine?.set, value), over(keys, peer.set, value));
    await duel(KEYS, KEYS, over(keys, mine?.get), over(keys, peer.get));
    for (let r = 0; r < rounds; r++) {
      push('bs', 'ps', await duel(n, CHUNK, over(keys, mine?.set, value), over(keys, peer.set, value)));
      push('bg', 'pg', await duel(n, CHUNK, over(keys, mine?.get), over(keys, peer.get)));
      got.pb.push((await duel(n, CHUNK, null, over(keys, peer.bareSet, value)))[1]);
    }
    if (mine) {
      const e = mine.get(keys[0]);
      if (!e || !Buffer.from(e.value).equals(value)) throw new Error('bitt sqlite get returned a wrong value');
    }
    if (!peer.get(keys[0]).value.equals(value)) throw new Error('better-sqlite3 get returned a wrong value');
  } finally {
    mine?.close();
    peer.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const b = (xs) => (mine ? median(xs) : null);
  const row = (op, ours, peerName, peer) => ({ op, bitt: ours, peerName, peer });
  return [
    row('sqlite set (tx + versionstamp + upsert)', b(got.bs), 'better-sqlite3', median(got.ps)),
    row('sqlite get', b(got.bg), 'better-sqlite3', median(got.pg)),
    row('sqlite set vs bare upsert (reference)', b(got.bs), 'better-sqlite3 autocommit', median(got.pb)),
  ];
}
