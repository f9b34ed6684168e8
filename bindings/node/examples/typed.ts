// A typed example: checked by `tsc --strict` (scripts/test-node, which also
// runs what it compiles to). It uses every public API of the package, with
// the types index.d.ts gives, and disposes of stores, transactions,
// subscriptions and consumers with `using` / `await using`.
import * as bitt from 'bitt';

function syncPart(): bigint {
  using s: bitt.Store = bitt.open('memory:');
  s.migrate();
  const backend: string = s.backend;
  s.clock.setManual(new Date(1_000_000));
  const v: bigint = s.kv.set(['users', 42n], { name: 'Ada' }, { ttl: 60_000 });
  const e: bitt.Entry | null = s.kv.get(['users', 42n]);
  if (e !== null && e.version !== v) throw new Error('unexpected version');
  const expires: Date | null = e?.expiresAt ?? null;
  const json: string = JSON.stringify(e); // versions as decimal strings
  const added: bigint | null = s.kv.add('once', true);
  const n: bigint = s.kv.increment('visits', 1n, { ttl: 1000 });
  const taken: bitt.Entry | null = s.kv.take('once');
  const many: (bitt.Entry | null)[] = s.kv.getMany(['visits', 'none']);
  const page: bitt.Page = s.kv.page({ prefix: ['users'], limit: 10 });
  for (const entry of s.kv.list({ prefix: ['users'] })) console.log(entry.key, entry.value);
  const deleted: boolean = s.kv.delete('visits');
  const purged: number = s.kv.purgeExpired();

  const id: bigint = s.queue.enqueue('emails', { to: 'ada@example.com' }, { maxAttempts: 5, dedupKey: 'ada', delay: 0 });
  const [msg]: bitt.Message[] = s.queue.dequeue('emails', { limit: 1, lease: 30_000, wait: 0 });
  if (msg && msg.id === id) {
    const due: Date | null = msg.dueAt;
    s.queue.extend(msg, 60_000);
    s.queue.snooze(msg.topic, msg.id, msg.token ?? '', 0);
    console.log(due);
  }
  const [again] = s.queue.dequeue('emails', { lease: 30_000 });
  if (again) s.queue.nack(again, 'try later', { delay: 0 });
  const [third] = s.queue.dequeue('emails', { lease: 30_000 });
  if (third) s.queue.ack(third);
  s.queue.enqueue('emails', 'two');
  const batch = s.queue.dequeue('emails', { limit: 10 });
  const acked: boolean[] = s.queue.ackMany('emails', batch);
  const dead: bitt.Message[] = s.queue.deadList('emails', { limit: 10 });
  const retried: number = s.queue.deadRetry('emails');
  const removed: number = s.queue.deadDelete('emails');
  const stats: bitt.QueueStats = s.queue.stats('emails');
  const oldest: Date | null = stats.oldestPendingAt;
  const doneCount: number = stats.done;
  const purgedNow: number = s.queue.purge(null);

  // queue control: priorities, several topics, messages by id, queue ops in a commit
  const run: bigint = s.queue.enqueue('runs', { run: 1 }, { delay: 3_600_000 });
  s.queue.enqueue('steps', { step: 'pay' }, { priority: 10 });
  const [step]: bitt.Message[] = s.queue.dequeue(['steps', 'runs'], { limit: 1 });
  const state: bitt.MessageState | null = step ? step.state : null;
  const priority: number = step ? step.priority : 0;
  if (step) {
    using tx: bitt.Atomic = s.atomic();
    tx.set(['result', step.id], 'paid').queueAck(step, { result: { paid: true } }).queueReschedule('runs', run, 0);
    tx.commit();
  }
  const found: bitt.Message | null = s.queue.get('runs', run);
  const doneAt: Date | null = found ? found.doneAt : null;
  const result: Buffer | null = found ? found.result : null;
  const resultKind: number | null = found ? found.resultKind : null;
  const resultValue: bitt.StoredValue | undefined = found ? found.resultValue : undefined;
  const moved: boolean = s.queue.reschedule('runs', run, 1000);
  const cancelled: boolean = s.queue.cancel('runs', run);
  console.log(state, priority, found?.state, moved, cancelled);
  s.queue.enqueue('steps', 'more');
  const [more] = s.queue.dequeue(['steps']);
  if (more) {
    s.atomic().queueExtend(more, 1000).commit();
    s.atomic().queueSnooze(more.topic, more.id, more.token ?? '', 0).commit();
  }
  const [again2] = s.queue.dequeue('steps');
  if (again2) {
    s.atomic().queueNack(again2, 'no', { delay: 0 }).commit();
    s.atomic().queueCancel('steps', again2.id).commit();
  }

  const lease: bitt.Lease | null = s.lease.acquire('cron', 'worker-1', 10_000);
  if (lease) {
    const until: Date = s.lease.renew('cron', 'worker-1', lease.epoch, 10_000);
    const held: bitt.Lease | null = s.lease.get('cron');
    console.log(until, held?.owner);
  }
  {
    using tx: bitt.Atomic = s.atomic();
    if (lease) tx.fence('cron', 'worker-1', lease.epoch);
    tx.check('a', null).set('a', 1n, { ttl: 5000 }).sum('b', 2n).delete('c')
      .enqueue('jobs', 'x', { maxAttempts: 2 }).outboxAppend('events', { type: 'a-set' });
    tx.commit();
  }
  {
    using dropped = s.atomic(); // never committed: dropped at the end of the block
    dropped.set('never', 1);
  }
  if (lease) s.lease.release('cron', 'worker-1', lease.epoch);

  const seq: bigint = s.outbox.append('events', { type: 'b' });
  const pending: bitt.Message[] = s.outbox.pending('events', 10);
  const failed: boolean = s.outbox.fail('events', seq, 'down', new Date(2_000_000));
  const parked: boolean = s.outbox.park('events', seq, 'poison', 'bad');
  const parkedList: bitt.Message[] = s.outbox.parked('events', 'any', 10);
  const back: number = s.outbox.retry('events', [seq]);
  const acks: number = s.outbox.ack('events', pending.map((p) => p.id));
  const discarded: number = s.outbox.discard('events');
  const counts = s.outbox.counts('events');

  const wait: number = s.budget.take('api', { capacity: 10, refill: 1, period: 1000, n: 1 });
  s.schedule.upsert('daily', 86_400_000, { job: 'report' }, { firstRunAt: new Date(1_000_000) });
  s.schedule.upsert('nightly', null, { job: 'sweep' }, { cron: '0 3 * * *', topic: 'jobs', maxAttempts: 2, priority: 1 });
  const due: bitt.Schedule | null = s.schedule.claim();
  const cron: string | null = due ? due.cron : null;
  const schedTopic: string | null = due ? due.topic : null;
  const messageId: bigint = due ? due.messageId : 0n;
  const got: bitt.Schedule | null = s.schedule.get('daily');
  const all: bitt.Schedule[] = s.schedule.list();
  const gone: boolean = s.schedule.delete('daily');
  s.clock.advance(10);
  const now: Date = s.clock.now();
  s.clock.useSystem();

  {
    using sub: bitt.Subscription = s.pubsub.subscribe('news');
    s.pubsub.publish('news', 'hello');
    const m: bitt.Message | null = sub.next(100, { signal: AbortSignal.timeout(60_000) });
    console.log(m?.payload.toString());
  }

  const key: Buffer = bitt.encodeKey(['users', 42n]);
  const parts: bitt.TuplePart[] = bitt.decodeTuple(key);
  const [bytes, kind] = bitt.encodeValue({ a: -0 });
  const value: bitt.StoredValue = bitt.decodeValue(bytes, kind);
  const token: bigint = s.share();
  {
    using other = bitt.attach(token);
    console.log(other.kv.get('a')?.value);
  }
  console.log(backend, expires, json, added, n, taken, many, page.cursor, deleted, purged, acked, dead, retried, removed,
    oldest, failed, parked, parkedList, back, acks, discarded, counts.pending, wait, due?.occurrence, got?.nextRunAt,
    all.length, gone, now, parts, value, bitt.version, bitt.KIND_BYTES, bitt.KIND_JSON, bitt.KIND_COUNTER);
  return v;
}

async function asyncPart(url: string): Promise<void> {
  await using a: bitt.AsyncStore = await bitt.openAsync(url);
  await a.migrate();
  try {
    await a.kv.set(Buffer.from([0, 1]), Buffer.from('raw'));
    const e = await a.kv.get(Buffer.from([0, 1]));
    const bytes: bitt.StoredValue | undefined = e?.value;
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
    await a.queue.enqueue('jobs', 'third');
    const urgent: bigint = await a.queue.enqueue('jobs', 'urgent', { priority: 1, delay: 60_000 });
    const got: bitt.Message | null = await a.queue.get('jobs', urgent);
    const woken: boolean = await a.queue.reschedule('jobs', urgent);
    const [u] = await a.queue.dequeue(['jobs', 'other']);
    const gone: boolean = await a.queue.cancel('jobs', urgent);
    console.log(got?.state, woken, u?.priority, gone);
    {
      await using consumer: bitt.Consumer = a.queue.consume('jobs', { prefetch: 4, wait: 0 });
      const first: IteratorResult<bitt.ConsumedMessage, undefined> = await consumer.next();
      if (!first.done) await first.value.nack('later', { delay: 0 });
    }
    const ac = new AbortController();
    const waiting = a.queue.dequeue('empty', { wait: 60_000, signal: ac.signal });
    ac.abort(new Error('shutting down'));
    try {
      await waiting;
    } catch (err) {
      if (!(err instanceof bitt.AbortError)) throw err;
      const code: 'ABORT_ERR' = err.code;
      console.log(code, err.status, err.cause);
    }
    {
      await using sub: bitt.AsyncSubscription = a.pubsub.subscribe('news', { signal: AbortSignal.timeout(60_000) });
      await sub.ready;
      await a.pubsub.publish('news', 'hello');
      for await (const m of sub) {
        console.log(m.payload.toString());
        break;
      }
    }
    {
      await a.queue.enqueue('work', { n: 2 });
      await a.queue.enqueue('work', { n: -1 });
      const handler: bitt.WorkerHandler = async (m: bitt.Message, { signal }: bitt.HandlerContext) => {
        if (signal.aborted) throw new bitt.Snooze(1000); // given back unseen
        const n = (m.value as { n: number }).n;
        if (n < 0) throw new Error('negative'); // nacked with this text
        return n * 2; // acked
      };
      const options: bitt.WorkerOptions = { concurrency: 2, prefetch: 2, lease: 30_000, heartbeat: 10_000, wait: 100 };
      await using w: bitt.Worker = new bitt.Worker(a, 'work', handler, options);
      const handled = new Promise<void>((resolve) => {
        const check = () => {
          const c: bitt.WorkerCounters = w.counters;
          if (c.completed + c.failed === 2) resolve();
        };
        w.on('completed', (m: bitt.Message, result: unknown) => {
          console.log(m.id, result);
          check();
        });
        w.on('failed', (m, error) => {
          console.log(m.id, error);
          check();
        });
      });
      w.on('stalled', (m) => console.log('stalled', m.id));
      w.on('error', (err, m) => console.log(err, m?.id));
      await handled;
      const stopped: bitt.WorkerCounters = await w.stop({ timeout: 5000 });
      console.log(stopped.claimed, stopped.released, stopped.snoozed, stopped.stalled, stopped.running);
    }
    const tx = await a.atomic();
    const version: bigint = await tx.check('k', null).set('k', 1n).commit();
    console.log(version, await a.outbox.counts('events'));
    await (await a.atomic()).check('k', null).set('k', 2n).commit(); // a conflict
  } catch (err) {
    if (!(err instanceof bitt.ConflictError)) throw err;
    const code: bitt.ErrorCode = err.code;
    const status: number = err.status;
    console.log(code, status, err.message);
  }
  const token = a.share();
  const other: bitt.AsyncStore = await bitt.attachAsync(token);
  await other.close();
}

syncPart();
void asyncPart('memory:');
