// A typed example: checked by `tsc --noEmit` (scripts/test-node), run by
// nothing. It uses every namespace once with the types index.d.ts gives.
import * as bitt from 'bitt';

function syncPart(): bigint {
  const s: bitt.Store = bitt.open('memory:');
  const v: bigint = s.kv.set(['users', 42n], { name: 'Ada' }, { ttl: 60_000 });
  const e: bitt.Entry | null = s.kv.get(['users', 42n]);
  if (e !== null && e.version !== v) throw new Error('unexpected version');
  const n: bigint = s.kv.increment('visits', 1n);
  for (const entry of s.kv.list({ prefix: ['users'] })) console.log(entry.key, entry.value);
  const id: bigint = s.queue.enqueue('emails', { to: 'ada@example.com' }, { maxAttempts: 5, dedupKey: 'ada' });
  const [msg]: bitt.Message[] = s.queue.dequeue('emails', { limit: 1, lease: 30_000 });
  if (msg && msg.id === id) s.queue.ack(msg);
  const lease: bitt.Lease | null = s.lease.acquire('cron', 'worker-1', 10_000);
  const tx: bitt.Atomic = s.atomic();
  if (lease) tx.fence('cron', 'worker-1', lease.epoch);
  tx.set('a', 1n).sum('b', 2n).outboxAppend('events', { type: 'a-set' });
  const committed: bigint = tx.commit();
  const wait: number = s.budget.take('api', { capacity: 10, refill: 1, period: 1000 });
  s.schedule.upsert('daily', 86_400_000, { job: 'report' });
  const due: bitt.Schedule | null = s.schedule.claim();
  const now: number = s.clock.now();
  const stats: bitt.QueueStats = s.queue.stats('emails');
  console.log(n, committed, wait, due?.key, now, stats.pending);
  s.close();
  return committed;
}

async function asyncPart(url: string): Promise<void> {
  const a: bitt.AsyncStore = await bitt.openAsync(url);
  try {
    await a.kv.set(Buffer.from([0, 1]), Buffer.from('raw'));
    const e = await a.kv.get(Buffer.from([0, 1]));
    const bytes: bitt.Value | undefined = e?.value;
    console.log(bytes);
    for await (const entry of a.kv.list({ limit: 10 })) console.log(entry.key);
    await a.queue.enqueue('jobs', 'payload', { delay: 0 });
    await a.queue.enqueue('jobs', 'second');
    for await (const m of a.queue.consume('jobs', { lease: 1000, wait: 500 })) {
      if (m.value === 'payload') {
        await a.queue.ack(m);
        continue;
      }
      const done: Promise<void> = m.ack(); // grouped with the consumer's other acks
      await done;
      break;
    }
    const sub: bitt.AsyncSubscription = a.pubsub.subscribe('news');
    await sub.ready;
    await a.pubsub.publish('news', 'hello');
    for await (const m of sub) {
      console.log(m.payload.toString());
      break;
    }
    const tx = await a.atomic();
    const version: bigint = await tx.check('k', null).set('k', 1n).commit();
    console.log(version, await a.outbox.counts('events'));
  } catch (err) {
    if (err instanceof bitt.ConflictError) console.log(err.code, err.codeName);
    else throw err;
  } finally {
    await a.close();
  }
}

syncPart();
void asyncPart('memory:');
