// End to end through the control plane and the sandbox agent (envd API, through the gateway),
// with the unmodified e2b SDK: env vars and the access token reach the agent by /init; commands
// (output, streaming callbacks, exit codes, background and killed, stdin), a PTY and its resize,
// files (write, read, list, rename, remove, watch, 100 MiB each way), pause keeping memory. TEMPLATE (default base). Prints "ok: ..." per check; exit 1 at the first
// failure.
import { Sandbox, CommandExitError } from 'e2b'
import { ok, until } from './check.mjs'

const TEMPLATE = process.env.TEMPLATE || 'base'

// the SDK sends no `secure`: E2B's default (true) makes an access token
const sbx = await Sandbox.create(TEMPLATE, { envs: { WARREN_E2B: 'from-init' }, timeoutMs: 300_000 })
ok('a create answers an access token (secure by default)', typeof sbx.envdAccessToken === 'string' && sbx.envdAccessToken.length === 64)
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
// streaming callbacks see stdout and stderr as they come
let out = '', err = ''
r = await sbx.commands.run('for i in 1 2 3; do echo out$i; echo err$i >&2; done', {
  onStdout: (d) => { out += d },
  onStderr: (d) => { err += d },
})
ok('commands.run: onStdout streams stdout', out === 'out1\nout2\nout3\n', out)
ok('commands.run: onStderr streams stderr', err === 'err1\nerr2\nerr3\n', err)
// a background command is listed, killed, and gone from the list
const bg = await sbx.commands.run('sleep 600', { background: true })
ok('a background command is listed', (await sbx.commands.list()).some((p) => p.pid === bg.pid))
ok('kill of a background command', (await bg.kill()) === true)
let ended
try {
  ended = await bg.wait()
} catch (e) {
  ended = e
}
ok('the killed command ends, not with 0', ended.exitCode !== 0, String(ended))
await until('the killed command leaves the list', 10, async () =>
  !(await sbx.commands.list()).some((p) => p.pid === bg.pid))
// stdin reaches a process; closing it ends the process
const cat = await sbx.commands.run('cat', { background: true, stdin: true })
await sbx.commands.sendStdin(cat.pid, 'hello-stdin\n')
await sbx.commands.closeStdin(cat.pid)
r = await cat.wait()
ok('sendStdin reaches the process, closeStdin ends it', r.stdout === 'hello-stdin\n' && r.exitCode === 0, r.stdout)
// a PTY sees its size and a resize
const te = new TextEncoder(), td = new TextDecoder()
let term = ''
const pty = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { term += td.decode(d) } })
await sbx.pty.sendInput(pty.pid, te.encode('stty size\n'))
await until('the PTY is 24 rows by 80 columns', 20, () => term.includes('24 80'))
await sbx.pty.resize(pty.pid, { cols: 100, rows: 30 })
await sbx.pty.sendInput(pty.pid, te.encode('stty size\n'))
await until('after a resize it is 30 by 100', 20, () => term.includes('30 100'))
await sbx.pty.sendInput(pty.pid, te.encode('exit\n'))
await pty.wait().catch(() => {})
// files: make a directory, rename, remove, watch
ok('files: makeDir', (await sbx.files.makeDir('/tmp/d/e')) === true)
await sbx.files.write('/tmp/d/e/a.txt', 'A')
await sbx.files.rename('/tmp/d/e/a.txt', '/tmp/d/e/b.txt')
ok('files: rename moves the file', !(await sbx.files.exists('/tmp/d/e/a.txt')) &&
  (await sbx.files.read('/tmp/d/e/b.txt')) === 'A')
await sbx.files.remove('/tmp/d/e/b.txt')
ok('files: remove', !(await sbx.files.exists('/tmp/d/e/b.txt')))
const seen = []
const watch = await sbx.files.watchDir('/tmp/d', (ev) => seen.push(ev.name))
await sbx.files.write('/tmp/d/new.txt', 'new')
await until('files: watchDir sees a file written in the directory', 20, () => seen.includes('new.txt'))
await watch.stop()
// 100 MiB up and down, checked by SHA-256 on both sides
const { createHash, randomBytes } = await import('node:crypto')
const big = randomBytes(100 << 20)
const sum = createHash('sha256').update(big).digest('hex')
await sbx.files.write('/tmp/big.bin', new Blob([big]), { requestTimeoutMs: 300_000 })
r = await sbx.commands.run('sha256sum /tmp/big.bin', { timeoutMs: 120_000 })
ok('files: a 100 MiB upload lands whole (sha256 inside the sandbox)', r.stdout.split(' ')[0] === sum, r.stdout)
const down = createHash('sha256')
let size = 0
for await (const chunk of await sbx.files.read('/tmp/big.bin', { format: 'stream', requestTimeoutMs: 300_000 })) {
  down.update(chunk)
  size += chunk.length
}
ok('files: its download gives the same bytes', size === big.length && down.digest('hex') === sum, size)
await sbx.commands.run('rm /tmp/big.bin')
// pause keeps the process's memory: a background process's counter survives freeze + thaw
// single quotes: the agent runs a command with bash -c, which would expand $i in double quotes
await sbx.commands.run("sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.2; done' >/dev/null 2>&1 &", { background: true })
await new Promise((r) => setTimeout(r, 1500))
ok('pause', (await sbx.pause()) === true)
const again = await Sandbox.connect(sbx.sandboxId)
await new Promise((r) => setTimeout(r, 1000))
r = await again.commands.run('cat /tmp/count')
ok('after pause/connect the background process still counts', Number(r.stdout) > 5, r.stdout)
ok('kill', (await sbx.kill()) === true)
process.exit(0)
