// Warren's E2B control plane driven by the published, unmodified e2b SDK. Configured only by
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY; TEMPLATE names the Warren template and RUN the
// metadata value that tells this run's sandboxes apart. Prints "ok: ..." per check, and
// "ids: <a> <b> <c>" for the shell test to check against D-Bus; exits 1 at the first failure.
import { Sandbox, AuthenticationError, SandboxNotFoundError } from 'e2b'
import { ok, sleep, until } from './check.mjs'

const TEMPLATE = process.env.TEMPLATE || 'base'
const RUN = process.env.RUN || String(process.pid)

// a key of the right shape that was never issued
try {
  await Sandbox.create(TEMPLATE, { apiKey: 'e2b_' + '0'.repeat(40) })
  ok('a bad API key is refused', false)
} catch (e) {
  ok('a bad API key is refused (401, AuthenticationError)', e instanceof AuthenticationError, String(e))
}

const a = await Sandbox.create(TEMPLATE, { metadata: { suite: RUN, role: 'a' }, timeoutMs: 120_000 })
ok('create answers a Warren sandbox id', /^[0-9a-f]{12}$/.test(a.sandboxId), a.sandboxId)
const info = await Sandbox.getInfo(a.sandboxId)
ok('getInfo: template', info.templateId === TEMPLATE, info.templateId)
ok('getInfo: metadata', info.metadata.suite === RUN && info.metadata.role === 'a', info.metadata)
ok('getInfo: running', info.state === 'running', info.state)
const life = (info.endAt - info.startedAt) / 1000
ok('getInfo: endAt is startedAt + the timeout', Math.abs(life - 120) < 2, life)
ok('getInfo: memoryMB is the template limit', info.memoryMB > 0, info.memoryMB)

const b = await Sandbox.create(TEMPLATE, { metadata: { suite: RUN, role: 'b' }, timeoutMs: 120_000 })
const list = async (query, limit) => {
  const p = Sandbox.list({ query, limit })
  const pages = []
  while (p.hasNext) pages.push(await p.nextItems())
  return pages
}
let pages = await list({ metadata: { suite: RUN } })
let ids = pages.flat().map((s) => s.sandboxId).sort()
ok('list by metadata finds both', JSON.stringify(ids) === JSON.stringify([a.sandboxId, b.sandboxId].sort()), ids)
pages = await list({ metadata: { suite: RUN, role: 'a' } })
ids = pages.flat().map((s) => s.sandboxId)
ok('list by two metadata pairs finds one', ids.length === 1 && ids[0] === a.sandboxId, ids)
pages = await list({ metadata: { suite: RUN } }, 1)
ok('list paginates (limit 1: two pages of one)', pages.length === 2 && pages.every((p) => p.length === 1),
  pages.map((p) => p.length))
pages = await list({ metadata: { suite: 'no-such-' + RUN } })
ok('list by unknown metadata finds none', pages.flat().length === 0, pages)

// setTimeout: the sandbox is killed when it expires
await Sandbox.setTimeout(b.sandboxId, 2_000)
await until('a sandbox whose timeout expired is gone', 30, async () => {
  try { await Sandbox.getInfo(b.sandboxId); return false } catch (e) { return e instanceof SandboxNotFoundError }
})

// pause and resume (connect)
ok('pause', (await a.pause()) === true)
let st = await Sandbox.getInfo(a.sandboxId)
ok('paused sandbox reports state paused', st.state === 'paused', st.state)
ok('pause again: already paused (409 -> false)', (await Sandbox.pause(a.sandboxId)) === false)
pages = await list({ metadata: { suite: RUN }, state: ['paused'] })
ok('list state=paused finds it', pages.flat().some((s) => s.sandboxId === a.sandboxId))
pages = await list({ metadata: { suite: RUN }, state: ['running'] })
ok('list state=running does not', !pages.flat().some((s) => s.sandboxId === a.sandboxId))
console.log(`paused: ${a.sandboxId}`)
if (process.env.PAUSE_HOLD) await sleep(Number(process.env.PAUSE_HOLD))
const again = await Sandbox.connect(a.sandboxId, { timeoutMs: 60_000 })
ok('connect resumes it', again.sandboxId === a.sandboxId)
st = await Sandbox.getInfo(a.sandboxId)
ok('resumed sandbox reports state running', st.state === 'running', st.state)

// fork: Warren's branch (checkpoint, parent restored in place, children from the image)
const forks = await Sandbox.fork(a.sandboxId, { count: 2, timeoutMs: 60_000 })
ok('fork answers two sandboxes', forks.length === 2 && forks.every((f) => f instanceof Sandbox), forks.map(String))
for (const f of forks) {
  const fi = await Sandbox.getInfo(f.sandboxId)
  ok(`fork ${f.sandboxId} is its own sandbox with the parent's metadata`,
    f.sandboxId !== a.sandboxId && fi.metadata.role === 'a' && fi.state === 'running', fi)
}
ok('the parent runs on after the fork', (await Sandbox.getInfo(a.sandboxId)).state === 'running')
console.log(`forks: ${forks.map((f) => f.sandboxId).join(' ')}`)
for (const f of forks) ok('kill a fork', (await f.kill()) === true)

// autoPause: on expiry the sandbox is paused, not killed
const c = await Sandbox.create(TEMPLATE, { metadata: { suite: RUN, role: 'c' }, timeoutMs: 2_000, lifecycle: { onTimeout: 'pause' } })
await until('a sandbox with onTimeout pause is paused when it expires', 30,
  async () => (await Sandbox.getInfo(c.sandboxId)).state === 'paused')
await Sandbox.connect(c.sandboxId, { timeoutMs: 60_000 })
ok('and connect resumes it', (await Sandbox.getInfo(c.sandboxId)).state === 'running')

console.log(`ids: ${a.sandboxId} ${b.sandboxId} ${c.sandboxId}`)
ok('kill', (await a.kill()) === true)
ok('kill again: not found (404 -> false)', (await Sandbox.kill(a.sandboxId)) === false)
try { await Sandbox.getInfo(a.sandboxId); ok('getInfo after kill', false) } catch (e) {
  ok('getInfo after kill: not found', e instanceof SandboxNotFoundError, String(e))
}
ok('kill the third', (await Sandbox.kill(c.sandboxId)) === true)
process.exit(0) // a failed check has exited already
