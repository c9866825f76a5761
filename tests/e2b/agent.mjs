// End to end through the control plane and the sandbox agent (envd API, through the gateway),
// with the unmodified e2b SDK: env vars and the access token reach the agent by /init, commands
// run, files move. TEMPLATE (default base). Prints "ok: ..." per check; exit 1 at the first
// failure.
import { Sandbox, CommandExitError } from 'e2b'

const TEMPLATE = process.env.TEMPLATE || 'base'
function ok(what, cond, detail) {
  if (!cond) {
    console.log(`FAIL: ${what}${detail !== undefined ? ': ' + JSON.stringify(detail) : ''}`)
    process.exit(1)
  }
  console.log(`ok: ${what}`)
}

const sbx = await Sandbox.create(TEMPLATE, { envs: { WARREN_E2B: 'from-init' }, secure: true, timeoutMs: 120_000 })
ok('a secure create answers an access token', typeof sbx.envdAccessToken === 'string' && sbx.envdAccessToken.length === 64)
let r = await sbx.commands.run('echo "$WARREN_E2B"; echo err >&2')
ok('commands.run: stdout, with the env var given at create (/init)', r.stdout === 'from-init\n', r.stdout)
ok('commands.run: stderr', r.stderr === 'err\n', r.stderr)
ok('commands.run: exit code 0', r.exitCode === 0, r.exitCode)
try {
  await sbx.commands.run('exit 3')
  ok('a failing command throws', false)
} catch (e) {
  ok('a failing command throws CommandExitError with its code', e instanceof CommandExitError && e.exitCode === 3, String(e))
}
await sbx.files.write('/tmp/warren-e2b.txt', 'hello from the SDK\n')
ok('files: write then read', (await sbx.files.read('/tmp/warren-e2b.txt')) === 'hello from the SDK\n')
const names = (await sbx.files.list('/tmp')).map((e) => e.name)
ok('files: list', names.includes('warren-e2b.txt'), names)
// the agent refuses a request without the sandbox's token: the token the control plane made
const url = `${process.env.E2B_SANDBOX_URL}/files?path=${encodeURIComponent('/tmp/warren-e2b.txt')}`
const headers = { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' }
let res = await fetch(url, { headers })
ok('without X-Access-Token the agent refuses (401)', res.status === 401, res.status)
res = await fetch(url, { headers: { ...headers, 'X-Access-Token': sbx.envdAccessToken } })
ok('with it, the file comes back', res.status === 200 && (await res.text()) === 'hello from the SDK\n', res.status)
// pause keeps the process's memory: a background process's counter survives freeze + thaw
await sbx.commands.run('sh -c "i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.2; done" >/dev/null 2>&1 &', { background: true })
await new Promise((r) => setTimeout(r, 1500))
ok('pause', (await sbx.pause()) === true)
const again = await Sandbox.connect(sbx.sandboxId)
await new Promise((r) => setTimeout(r, 1000))
r = await again.commands.run('cat /tmp/count')
ok('after pause/connect the background process still counts', Number(r.stdout) > 5, r.stdout)
ok('kill', (await sbx.kill()) === true)
process.exit(0)
