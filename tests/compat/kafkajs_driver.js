// kafkajs: its producer, consumer and admin client, call by call, as tests/compat/harness.py
// describes a driver: `node kafkajs_driver.js BOOTSTRAP CALL...`, one JSON line per call.
// kafkajs itself is found at $KAFKACORE_KAFKAJS (tests/compat/kafkajs.py installs it).
'use strict'

const {
  Kafka, logLevel, ConfigResourceTypes, AclResourceTypes, AclOperationTypes,
  AclPermissionTypes, ResourcePatternTypes,
} = require(process.env.KAFKACORE_KAFKAJS)

const RECORDS = 10
const TIMEOUT_MS = 15000
const [bootstrap, ...wanted] = process.argv.slice(2)
const kafka = new Kafka({
  clientId: 'kafkacore-compat', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING,
  connectionTimeout: 10000, requestTimeout: TIMEOUT_MS, retry: { retries: 2 },
})
let admin = null

function check (condition, what) {
  if (!condition) throw new Error(what)
}

function values () {
  return Array.from({ length: RECORDS }, (_, i) => `v${i}`)
}

// What a call needs before it runs: made with kafkajs too (the Python drivers use kafkacore).
async function topic (name, partitions = 1) {
  await admin.createTopics({ topics: [{ topic: name, numPartitions: partitions, replicationFactor: 1 }] })
  return name
}

async function filled (name) {
  await topic(name)
  const producer = kafka.producer()
  await producer.connect()
  try {
    await producer.send({ topic: name, acks: -1, messages: values().map(v => ({ value: v, partition: 0 })) })
  } finally {
    await producer.disconnect()
  }
  return name
}

// A group with no members that committed `offset` for partition 0 of topic `name` (a member
// that read the records, committed and left).
async function committedGroup (name, offset = '5') {
  await filled(name)
  await readAsGroup(name, name, { commit: offset })
  return name
}

async function groupOffset (group, name) {
  const [t] = await admin.fetchOffsets({ groupId: group, topics: [name] })
  return t.partitions.find(p => p.partition === 0).offset
}

// Consume from the beginning in group `group` until RECORDS records came, commit `commit` if
// given; returns their values.  A short fetch wait: leaving waits for the fetch in flight.
async function readAsGroup (name, group, { commit, ...options } = {}) {
  const consumer = kafka.consumer({ groupId: group, maxWaitTimeInMs: 100, ...options })
  const got = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [name], fromBeginning: true })
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${got.length} of ${RECORDS} records`)), TIMEOUT_MS)
      consumer.run({
        autoCommit: false,
        eachMessage: async ({ message }) => {
          got.push(message.value.toString())
          if (got.length >= RECORDS) { clearTimeout(timer); resolve() }
        },
      }).catch(reject)
    })
    if (commit !== undefined) {
      await consumer.commitOffsets([{ topic: name, partition: 0, offset: commit }])
    }
  } finally {
    await consumer.disconnect()
  }
  return got
}

const topicConfig = name => [{ type: ConfigResourceTypes.TOPIC, name }]

async function retention (name) {
  const described = await admin.describeConfigs({ resources: topicConfig(name), includeSynonyms: false })
  return described.resources[0].configEntries.find(e => e.configName === 'retention.ms').configValue
}

const ABSENT = 'no call'
const calls = {
  async produce (name) {
    await topic(name)
    const producer = kafka.producer()
    await producer.connect()
    try {
      const acks = await producer.send({ topic: name, acks: -1, messages: values().map(v => ({ value: v, partition: 0 })) })
      check(acks.length === 1 && acks[0].errorCode === 0, `answered ${JSON.stringify(acks)}`)
    } finally {
      await producer.disconnect()
    }
  },
  consume: 'no call (a kafkajs consumer always joins a group; it has no assign())',
  async group_consume (name) {
    await filled(name)
    const got = await readAsGroup(name, name, { commit: String(RECORDS) })
    check(JSON.stringify(got) === JSON.stringify(values()), `read back ${got}`)
    const offset = await groupOffset(name, name)
    check(offset === String(RECORDS), `committed offset ${offset}`)
  },
  async metadata (name) {
    await topic(name)
    check((await admin.listTopics()).includes(name), 'topic not listed')
  },
  async create_topics (name) {
    check(await admin.createTopics({ topics: [{ topic: name, numPartitions: 2, replicationFactor: 1 }] }),
      'createTopics answered false (not created)')
    const { topics } = await admin.fetchTopicMetadata({ topics: [name] })
    check(topics[0].partitions.length === 2, 'created topic has not 2 partitions')
  },
  async delete_topics (name) {
    await topic(name)
    await admin.deleteTopics({ topics: [name], timeout: TIMEOUT_MS })
  },
  async create_partitions (name) {
    await topic(name)
    await admin.createPartitions({ topicPartitions: [{ topic: name, count: 3 }] })
  },
  async describe_configs (name) {
    await topic(name)
    check(await retention(name) === '604800000', "retention.ms is not Kafka's default")
  },
  incremental_alter_configs: 'no call (kafkajs 2.2 sends AlterConfigs only)',
  async alter_configs (name) {
    await topic(name)
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name, configEntries: [{ name: 'retention.ms', value: '23456' }] }],
    })
    check(await retention(name) === '23456', 'retention.ms not changed')
  },
  async delete_records (name) {
    await filled(name)
    // kafkajs finds the partition's leader in metadata it already has: fetch it first.
    await admin.fetchTopicMetadata({ topics: [name] })
    await admin.deleteTopicRecords({ topic: name, partitions: [{ partition: 0, offset: '5' }] })
    const [p] = await admin.fetchTopicOffsets(name)
    check(p.low === '5', `low watermark ${p.low}`)
  },
  async list_offsets (name) {
    await filled(name)
    const [p] = await admin.fetchTopicOffsets(name)
    check(p.high === String(RECORDS) && p.low === '0', `offsets ${JSON.stringify(p)}`)
  },
  async list_groups (name) {
    await committedGroup(name)
    const { groups } = await admin.listGroups()
    check(groups.some(g => g.groupId === name), 'group not listed')
  },
  async describe_groups (name) {
    await committedGroup(name)
    const { groups } = await admin.describeGroups([name])
    check(groups.length === 1 && groups[0].groupId === name && groups[0].errorCode === 0,
      `described ${JSON.stringify(groups)}`)
  },
  async list_group_offsets (name) {
    await committedGroup(name)
    const offset = await groupOffset(name, name)
    check(offset === '5', `offset ${offset}`)
  },
  async alter_group_offsets (name) {
    await committedGroup(name)
    await admin.setOffsets({ groupId: name, topic: name, partitions: [{ partition: 0, offset: '3' }] })
    const offset = await groupOffset(name, name)
    check(offset === '3', `offset ${offset}`)
  },
  consumer_group_consume: 'no call (the classic group protocol only)',
  offset_delete: ABSENT,
  async delete_groups (name) {
    await committedGroup(name)
    const [result] = await admin.deleteGroups([name])
    check(result.errorCode === 0, `answered ${JSON.stringify(result)}`)
  },
  async describe_cluster () {
    const cluster = await admin.describeCluster()
    check(cluster.brokers.length > 0 && cluster.controller !== null, `described ${JSON.stringify(cluster)}`)
    return 'reads Metadata'
  },
  describe_topic_partitions: ABSENT,
  describe_log_dirs: ABSENT,
  elect_leaders: ABSENT,
  async acls (name) {
    const acl = {
      resourceType: AclResourceTypes.TOPIC, resourceName: name, resourcePatternType: ResourcePatternTypes.LITERAL,
      principal: 'User:compat', host: '*', operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW,
    }
    await admin.createAcls({ acl: [acl] })
    const filter = { ...acl, operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY }
    const described = await admin.describeAcls(filter)
    check(described.resources.length === 1 && described.resources[0].acls.length === 1,
      `described ${JSON.stringify(described.resources)}`)
    const deleted = await admin.deleteAcls({ filters: [filter] })
    check(deleted.filterResponses[0].matchingAcls.length === 1, `deleted ${JSON.stringify(deleted)}`)
  },
  async transactions (name) {
    await topic(name)
    const producer = kafka.producer({ transactionalId: name, idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    try {
      const tx = await producer.transaction()
      await tx.send({ topic: name, messages: values().map(v => ({ value: v, partition: 0 })) })
      await tx.commit()
    } finally {
      await producer.disconnect()
    }
    const got = await readAsGroup(name, name, { readUncommitted: false })
    check(JSON.stringify(got) === JSON.stringify(values()), `read back ${got}`)
  },
}

function short (text, limit = 160) {
  let line = String(text).split('\n').map(l => l.trim()).find(l => l) || ''
  line = line.replace(/127\.0\.0\.1:\d+/g, 'HOST:PORT').replace(/localhost:\d+/g, 'HOST:PORT')
  return line.length <= limit ? line : line.slice(0, limit - 1) + '\u2026'
}

function report (call, status, detail = '') {
  process.stdout.write(JSON.stringify({ call, status, detail }) + '\n')
}

async function main () {
  admin = kafka.admin()
  await admin.connect()
  for (const call of wanted) {
    const fn = calls[call]
    if (fn === undefined) { report(call, 'fails', 'the kafkajs driver does not know this call'); continue }
    if (typeof fn === 'string') { report(call, 'absent', fn); continue }
    report(call, 'running')
    process.stderr.write(`-- kafkacore compat call: ${call}\n`) // harness.py's CALL_MARK
    const started = Date.now()
    try {
      const note = await fn(`kafkajs-${call.replace(/_/g, '-')}`)
      report(call, 'works', note || '')
      if (process.env.KAFKACORE_COMPAT_TIMES) process.stderr.write(`${call} ${Date.now() - started} ms\n`)
    } catch (e) {
      // kafkajs wraps the broker's answer: say what it wrapped too.
      const inner = (e.partitions || []).map(p => p.error && p.error.message).filter(Boolean)
      const cause = e.cause ? [e.cause.message] : []
      report(call, 'fails', short([`${e.name}: ${e.message}`, ...inner, ...cause].join(': ')))
    }
  }
  // As the Python drivers: a client's teardown is no call of the table.
  process.exit(0)
}

main().catch(e => { process.stderr.write(String(e.stack) + '\n'); process.exit(1) })
