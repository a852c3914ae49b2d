// Transactions with kafkajs against the broker under test; the last line of output is JSON
// for the Rust test. NODE_PATH must name the node_modules directory holding kafkajs.
//
//   produce-txns BS TOPIC TID   commit c1 c2 c3, abort a1 a2 (sent first), commit c4
//   consume BS TOPIC N          read_committed values from the start until N or 8 s idle
const { Kafka, logLevel } = require('kafkajs');

async function produceTxns(bs, topic, tid) {
  const kafka = new Kafka({ clientId: 'txn-test', brokers: [bs], logLevel: logLevel.WARN });
  const producer = kafka.producer({ transactionalId: tid, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const round = async (values, commit) => {
    const txn = await producer.transaction();
    await txn.send({ topic, messages: values.map((v) => ({ key: 'k', value: v })) });
    if (commit) await txn.commit(); else await txn.abort();
  };
  await round(['c1', 'c2', 'c3'], true);
  await round(['a1', 'a2'], false);
  await round(['c4'], true);
  await producer.disconnect();
  console.log(JSON.stringify({ done: true }));
}

async function consume(bs, topic, n) {
  const kafka = new Kafka({ clientId: 'txn-test', brokers: [bs], logLevel: logLevel.WARN });
  const consumer = kafka.consumer({ groupId: `reader-${Date.now()}`, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = [];
  let last = Date.now();
  await consumer.run({
    eachMessage: async ({ message }) => {
      got.push(message.value.toString());
      last = Date.now();
    },
  });
  while (got.length < Number(n) && Date.now() - last < 8000) {
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 1000));
  await consumer.disconnect();
  console.log(JSON.stringify({ values: got }));
}

const [cmd, ...args] = process.argv.slice(2);
const run = { 'produce-txns': produceTxns, consume }[cmd];
run(...args).then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
