'use strict';
// The installed package, from a fresh directory: loads at once, a sync
// SQLite round trip, and the Promise API on PostgreSQL and Redis when
// scripts/test exported their URLs.
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const bitt = require('bitt');

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bitt-smoke-'));
  const s = bitt.open(`sqlite:${dir}/smoke.db`);
  s.kv.set(['smoke', 1n], { ok: true });
  assert.deepEqual(s.kv.get(['smoke', 1n]).value, { ok: true });
  s.queue.enqueue('jobs', Buffer.from('x'));
  const [m] = s.queue.dequeue('jobs', { lease: 1000 });
  s.queue.ack(m);
  s.close();
  fs.rmSync(dir, { recursive: true, force: true });
  const tested = ['sqlite'];
  for (const [env, opt] of [['BITT_TEST_POSTGRES_URL', 'schema'], ['BITT_TEST_REDIS_URL', 'prefix']]) {
    const base = process.env[env];
    if (!base) continue;
    const a = await bitt.openAsync(`${base}${base.includes('?') ? '&' : '?'}${opt}=node_smoke_${process.pid}`);
    assert.equal(await a.kv.increment('n', 2n), 2n);
    assert.equal((await a.kv.get('n')).value, 2n);
    tested.push(a.backend);
    await a.close();
  }
  console.log(`bitt ${bitt.version} smoke: ok (${tested.join(', ')})`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
