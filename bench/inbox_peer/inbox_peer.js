// The consumer a skilled team writes by hand instead of adopting exo: the inbox
// pattern with kafkajs and node-postgres, no Redis. It is exo_bench's peer
// (issue "Throughput", scripts/bench.sh): the same ledger workload, the same
// PostgreSQL, side by side.
//
// Per fetched partition batch, one transaction: INSERT the batch's event ids
// into the inbox ON CONFLICT DO NOTHING RETURNING the new ones, insert the new
// netted balances in account order (so two transactions lock accounts in one
// order and cannot deadlock), insert the new ledger entries, COMMIT, then
// commit the offset. `partitionsConsumedConcurrently` partitions run at once,
// each on its own pooled connection.
//
// What it does NOT do, and exo does: per-account sequence checks (it applies
// whatever arrives), dead letters (a bad record fails its batch forever),
// bounded retries, claims that stop two members applying one event at once
// (the inbox's primary key makes the second one fail and retry).
//
// Environment (all required): PEER_BROKERS (comma-separated), PEER_TOPIC,
// PEER_GROUP, PEER_PG_URI, PEER_SCHEMA (the scenario's schema, which already
// holds accounts and ledger_entries), PEER_EXPECT (records to consume before
// stopping). Optional: PEER_CONCURRENCY (partitions at once, default 8),
// PEER_MAX_WAIT_MS (how long a fetch waits for data, default 20: exo_bench's mock
// cluster answers an empty fetch only when that wait is over, so exo runs there with
// fetch.wait.max.ms 20 and the peer with the same; kafkajs' own default, 5000, made
// every idle partition's records wait seconds in a paced run).
//
// Output: {"ready":true} on stdout once the group is joined (a paced run starts
// producing then, as it does for exo), and one JSON line when PEER_EXPECT records
// are committed (the time runs from the first fetched batch to the last offset
// commit): {"records":N,"transactions":T,"queries":Q,"seconds_to_committed":S,
// "peak_rss_kb":K}. Exit status 0, or 1 with the error on stderr.
'use strict';
const { Kafka, logLevel } = require('kafkajs');
const { Pool } = require('pg');

function required(name) {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is not set (see the header of ${__filename})`);
    return value;
}

const brokers = required('PEER_BROKERS').split(',');
const topic = required('PEER_TOPIC');
const groupId = required('PEER_GROUP');
const expect = Number(required('PEER_EXPECT'));
const concurrency = Number(process.env.PEER_CONCURRENCY || 8);
const maxWaitTimeInMs = Number(process.env.PEER_MAX_WAIT_MS || 20);
const pool = new Pool({
    connectionString: required('PEER_PG_URI'),
    options: `-c search_path=${required('PEER_SCHEMA')}`,
    max: concurrency,
});

const INBOX = `CREATE TABLE IF NOT EXISTS peer_inbox (
    event_id text PRIMARY KEY, received_at timestamptz NOT NULL DEFAULT now())`;
const CLAIM = `INSERT INTO peer_inbox (event_id) SELECT unnest($1::text[])
    ON CONFLICT DO NOTHING RETURNING event_id`;
const ENTRIES = `INSERT INTO ledger_entries (event_id, account_id, entry_type, amount, sequence_id)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[])`;
const BALANCES = `INSERT INTO accounts AS a (account_id, balance)
    SELECT * FROM unnest($1::text[], $2::bigint[])
    ON CONFLICT (account_id) DO UPDATE SET balance = a.balance + excluded.balance, updated_at = now()`;

// Applies one fetched partition batch in one transaction. Returns nothing; throws on failure
// (kafkajs then re-fetches the batch from the last committed offset).
let queries = 0;  // round trips to PostgreSQL, reported with the result

async function apply(payments) {
    const pooled = await pool.connect();
    const client = { query: (...args) => { queries++; return pooled.query(...args); } };
    try {
        await client.query('BEGIN');
        // Sorted, like the accounts: two batches sharing duplicated ids take their inbox
        // rows in one order and cannot deadlock.
        const ids = [...new Set(payments.map((p) => p.eventId))].sort();
        const claimed = await client.query(CLAIM, [ids]);
        const fresh = new Set(claimed.rows.map((r) => r.event_id));
        const entries = [];
        for (const p of payments) {
            // A duplicate inside the batch: the first copy took the id.
            if (fresh.delete(p.eventId)) entries.push(p);
        }
        if (entries.length > 0) {
            // Balances first: ledger_entries references accounts.
            const net = new Map();
            for (const p of entries) {
                const signed = p.type === 'CREDIT' ? p.amount : -p.amount;
                net.set(p.accountId, (net.get(p.accountId) || 0) + signed);
            }
            const accounts = [...net.keys()].sort();
            await client.query(BALANCES, [accounts, accounts.map((a) => net.get(a))]);
            await client.query(ENTRIES, [
                entries.map((p) => p.eventId), entries.map((p) => p.accountId),
                entries.map((p) => p.type), entries.map((p) => p.amount),
                entries.map((p) => p.sequenceId)]);
        }
        await client.query('COMMIT');
    } catch (e) {
        await client.query('ROLLBACK').catch(() => {});
        throw e;
    } finally {
        pooled.release();
    }
}

async function main() {
    await pool.query(INBOX);
    const kafka = new Kafka({ brokers, clientId: 'inbox-peer', logLevel: logLevel.ERROR });
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs });
    let announced = false;
    consumer.on(consumer.events.GROUP_JOIN, () => {
        if (announced) return;
        announced = true;
        process.stdout.write(JSON.stringify({ ready: true }) + '\n');
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    let records = 0;
    let transactions = 0;
    // From the first fetched batch, as exo_bench times exo from its first poll (the group
    // join before it is not the consumer's speed).
    let started;
    let finish;
    const finished = new Promise((resolve) => { finish = resolve; });
    await consumer.run({
        autoCommit: false,
        partitionsConsumedConcurrently: concurrency,
        eachBatch: async ({ batch, heartbeat, isRunning, isStale }) => {
            if (!isRunning() || isStale() || batch.messages.length === 0) return;
            started ??= process.hrtime.bigint();
            await apply(batch.messages.map((m) => JSON.parse(m.value.toString())));
            transactions++;
            const next = (BigInt(batch.lastOffset()) + 1n).toString();
            await consumer.commitOffsets([{ topic, partition: batch.partition, offset: next }]);
            records += batch.messages.length;
            await heartbeat();
            if (records >= expect) finish();
        },
    });
    await finished;
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    process.stdout.write(JSON.stringify({
        records, transactions, queries, seconds_to_committed: seconds,
        peak_rss_kb: process.resourceUsage().maxRSS }) + '\n');
    await consumer.disconnect();
    await pool.end();
}

main().then(() => process.exit(0), (e) => {
    process.stderr.write(`inbox_peer: ${e.stack || e}\n`);
    process.exit(1);
});
