// The E2B front door on a cluster (docs/MULTIHOST.md), driven by the published, unmodified e2b
// SDK pointed at ONE host's control plane (E2B_API_URL) and ONE gateway (E2B_SANDBOX_URL):
// COUNT creates (placed by clusterd, forwarded to the chosen host's control plane), then on
// each sandbox, wherever it landed: getInfo, commands.run, files write/read; list (every
// host's), setTimeout, pause and connect, kill. Prints "ok: ..." per check, "ids: ..." for the
// shell test to find each sandbox's host over D-Bus and "killed: <id>"; exit 1 at the first
// failure.
import { Sandbox, SandboxNotFoundError } from 'e2b'
import { ok, until } from './check.mjs'

const TEMPLATE = process.env.TEMPLATE || 'base'
const RUN = process.env.RUN || String(process.pid)
const COUNT = Number(process.env.COUNT || 4)

const list = async (query) => {
  const p = Sandbox.list({ query, limit: 2 })
  const pages = []
  while (p.hasNext) pages.push(await p.nextItems())
  return pages.flat()
}

const boxes = []
for (let i = 0; i < COUNT; i++) {
  const s = await Sandbox.create(TEMPLATE, { metadata: { suite: RUN, n: String(i) }, timeoutMs: 300_000 })
  ok(`create ${i} answers a Warren sandbox id with an access token`,
    /^[0-9a-f]{12}$/.test(s.sandboxId) && s.envdAccessToken?.length === 64, s.sandboxId)
  boxes.push(s)
}
console.log(`ids: ${boxes.map((s) => s.sandboxId).join(' ')}`)

for (const [i, s] of boxes.entries()) {
  const info = await Sandbox.getInfo(s.sandboxId)
  ok(`getInfo ${s.sandboxId}: template, metadata, running`,
    info.templateId === TEMPLATE && info.metadata.n === String(i) && info.state === 'running', info)
  const r = await s.commands.run(`echo "sandbox ${s.sandboxId}"; echo err >&2; exit 0`)
  ok(`commands.run in ${s.sandboxId}: stdout, stderr`, r.stdout === `sandbox ${s.sandboxId}\n` && r.stderr === 'err\n', r)
  const text = `written to ${s.sandboxId} through one gateway\n`
  await s.files.write('/tmp/cluster.txt', text)
  ok(`files write then read in ${s.sandboxId}`, (await s.files.read('/tmp/cluster.txt')) === text)
  const cat = await s.commands.run('cat /tmp/cluster.txt')
  ok(`the file is in ${s.sandboxId} itself`, cat.stdout === text, cat.stdout)
}

// every host's sandboxes in one list (limit 2: pages merged across hosts)
let ids = (await list({ metadata: { suite: RUN } })).map((s) => s.sandboxId).sort()
ok('list finds every sandbox of the run, wherever it runs', JSON.stringify(ids) ===
  JSON.stringify(boxes.map((s) => s.sandboxId).sort()), ids)
ids = (await list({ metadata: { suite: RUN, n: '1' } })).map((s) => s.sandboxId)
ok('list by two metadata pairs finds the one', ids.length === 1 && ids[0] === boxes[1].sandboxId, ids)

// the lifetime of each, set through the front door
for (const s of boxes) {
  await Sandbox.setTimeout(s.sandboxId, 240_000)
  const info = await Sandbox.getInfo(s.sandboxId)
  const left = (info.endAt - Date.now()) / 1000
  ok(`setTimeout ${s.sandboxId}: endAt about 240 s from now`, left > 200 && left <= 245, left)
}

// pause and connect each (its owner's control plane), then a command through the gateway
for (const s of boxes) {
  ok(`pause ${s.sandboxId}`, (await s.pause()) === true)
  ok(`${s.sandboxId} reports paused`, (await Sandbox.getInfo(s.sandboxId)).state === 'paused')
  const again = await Sandbox.connect(s.sandboxId, { timeoutMs: 180_000 })
  ok(`connect resumes ${s.sandboxId}`, (await Sandbox.getInfo(s.sandboxId)).state === 'running')
  const r = await again.commands.run('cat /tmp/cluster.txt')
  ok(`and its file is still there`, r.stdout === `written to ${s.sandboxId} through one gateway\n`, r.stdout)
}
const p = boxes[COUNT - 1]

// kill: each through the front door
for (const s of boxes.slice(0, COUNT - 1)) {
  ok(`kill ${s.sandboxId}`, (await s.kill()) === true)
  console.log(`killed: ${s.sandboxId}`)
  await until(`${s.sandboxId} is gone (getInfo: not found)`, 15, async () => {
    try { await Sandbox.getInfo(s.sandboxId); return false } catch (e) { return e instanceof SandboxNotFoundError }
  })
}
ok('kill twice: not found (false)', (await Sandbox.kill(boxes[0].sandboxId)) === false)
ids = (await list({ metadata: { suite: RUN } })).map((s) => s.sandboxId)
ok('list shows the one left', ids.length === 1 && ids[0] === p.sandboxId, ids)
console.log(`left: ${p.sandboxId}`)
