// Lifetimes of E2B sandboxes, enforced by Warren's supervisor (SetTimeout), driven by the
// published, unmodified e2b SDK. Configured by E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY;
// TEMPLATE names the Warren template. Prints "ok: ..." per check and lines for the shell test
// ("short: <id>", "long: <id>", "pause: <id>"), which reads the supervisor's side over D-Bus and
// signals back through files in SYNC_DIR; exits 1 at the first failure.
import { Sandbox, SandboxNotFoundError } from 'e2b'
import { existsSync } from 'node:fs'
import { ok, sleep, until } from './check.mjs'

const TEMPLATE = process.env.TEMPLATE || 'web'
const SYNC = process.env.SYNC_DIR
// running as the control plane says (getInfo; not found: false). The SDK's isRunning asks the
// sandbox's agent, which the web template has not.
async function running(id) {
  try { return (await Sandbox.getInfo(id)).state === 'running' } catch (e) {
    if (e instanceof SandboxNotFoundError) return false
    throw e
  }
}
const listed = async (id) => (await Sandbox.list().nextItems()).some((s) => s.sandboxId === id)
// the shell test answers "go-<name>" once it has checked what it must
async function handshake(name) {
  console.log(`wait: ${name}`)
  await until(`the shell test checked ${name}`, 60, async () => existsSync(`${SYNC}/go-${name}`))
}

// timeoutMs 4000: gone after ~4 s (getInfo not found, no longer listed)
const t0 = Date.now()
const short = await Sandbox.create(TEMPLATE, { timeoutMs: 4_000 })
console.log(`short: ${short.sandboxId}`)
const info = await Sandbox.getInfo(short.sandboxId)
const life = (info.endAt - info.startedAt) / 1000
ok('getInfo: endAt is startedAt + 4 s', Math.abs(life - 4) < 1.5, life)
ok('it runs at first', await running(short.sandboxId))
ok('and is listed', await listed(short.sandboxId))
await handshake('short')
await until('after its 4 s it is gone (getInfo: not found)', 30, async () => !(await running(short.sandboxId)))
await until('and no longer listed', 15, async () => !(await listed(short.sandboxId)))
const took = (Date.now() - t0) / 1000
ok(`it went at its end, not long before (${took.toFixed(1)} s after the create)`, took >= 3.5, took)

// setTimeout extends: 3 s, then 12 s: still running after the first 3
const long = await Sandbox.create(TEMPLATE, { timeoutMs: 3_000 })
console.log(`long: ${long.sandboxId}`)
await long.setTimeout(12_000)
const li = await Sandbox.getInfo(long.sandboxId)
ok('getInfo: endAt moved ~12 s ahead', (li.endAt - Date.now()) / 1000 > 9, li.endAt)
await handshake('long')
await sleep(5_000)
ok('setTimeout extended it: running past its first end', await running(long.sandboxId))
await until('and gone after the extended end', 30, async () => !(await running(long.sandboxId)))
ok('no longer listed', !(await listed(long.sandboxId)))

// onTimeout pause: paused at its end, a request (connect) resumes it with a new lifetime
const p = await Sandbox.create(TEMPLATE, { timeoutMs: 3_000, lifecycle: { onTimeout: 'pause' } })
console.log(`pause: ${p.sandboxId}`)
await handshake('pause-set')
await until('an onTimeout pause sandbox is paused at its end', 30,
  async () => (await Sandbox.getInfo(p.sandboxId)).state === 'paused')
await handshake('pause-frozen')
await Sandbox.connect(p.sandboxId, { timeoutMs: 60_000 })
ok('connect resumes it', (await Sandbox.getInfo(p.sandboxId)).state === 'running')
await handshake('pause-resumed')
ok('kill', (await p.kill()) === true)
console.log('done')
