// E2B SDK figures through Warren's E2B API and gateway, with the published e2b SDK (tests/e2b).
// Env: E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY (as any E2B client); MODE:
//   create    Sandbox.create -> first commands.run('true') result, per template of TEMPLATES
//             (comma list of "label=template"), N runs each (default 10), GAP_MS apart
//   run       commands.run('true') round trips in one sandbox of TEMPLATE (default base), N
//   transfer  100 MiB files.write and files.read (streamed), N each, SHA-256 checked
// Prints one JSON line per figure: {label, template, n, p50, p90, unit, samples}.
// the SDK installed by tests/e2b (npm ci there), pinned by its package-lock.json
const { Sandbox } = await import(new URL('../tests/e2b/node_modules/e2b/dist/index.mjs', import.meta.url))
const { createHash, randomBytes } = await import('node:crypto')

const N = Number(process.env.N || 10)
const MODE = process.env.MODE || 'create'
const TEMPLATE = process.env.TEMPLATE || 'base'
const GAP_MS = Number(process.env.GAP_MS || 0)
const pct = (v, p) => {
  const s = [...v].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]
}
const round = (x) => Math.round(x * 10) / 10
function report(label, template, samples, unit) {
  console.log(JSON.stringify({ label, template, n: samples.length, p50: pct(samples, 50), p90: pct(samples, 90), unit, samples }))
}

if (MODE === 'create') {
  const templates = (process.env.TEMPLATES || 'cold=base').split(',').map((t) => t.split('='))
  for (const [label, template] of templates) {
    const samples = []
    for (let i = 0; i < N; i++) {
      // GAP_MS between creates, untimed: a standby restored behind the last create is there
      await new Promise((resolve) => setTimeout(resolve, GAP_MS))
      const t0 = performance.now()
      const sbx = await Sandbox.create(template, { timeoutMs: 120_000 })
      const r = await sbx.commands.run('true')
      const t1 = performance.now()
      if (r.exitCode !== 0) throw new Error(`commands.run('true') exited ${r.exitCode}`)
      samples.push(round(t1 - t0))
      await sbx.kill()
    }
    report(label, template, samples, 'ms')
  }
} else if (MODE === 'run') {
  const sbx = await Sandbox.create(TEMPLATE, { timeoutMs: 600_000 })
  await sbx.commands.run('true') // the first one opens the connection
  const samples = []
  for (let i = 0; i < N; i++) {
    const t0 = performance.now()
    const r = await sbx.commands.run('true')
    samples.push(round(performance.now() - t0))
    if (r.exitCode !== 0) throw new Error(`commands.run('true') exited ${r.exitCode}`)
  }
  await sbx.kill()
  report('run', TEMPLATE, samples, 'ms')
} else if (MODE === 'transfer') {
  const size = 100 << 20
  const big = randomBytes(size)
  const sum = createHash('sha256').update(big).digest('hex')
  const sbx = await Sandbox.create(TEMPLATE, { timeoutMs: 600_000 })
  const up = [], down = []
  for (let i = 0; i < N; i++) {
    let t0 = performance.now()
    await sbx.files.write('/tmp/big.bin', new Blob([big]), { requestTimeoutMs: 600_000 })
    up.push(round(size / 1e6 / ((performance.now() - t0) / 1000)))
    const h = createHash('sha256')
    let got = 0
    t0 = performance.now()
    for await (const c of await sbx.files.read('/tmp/big.bin', { format: 'stream', requestTimeoutMs: 600_000 })) {
      h.update(c)
      got += c.length
    }
    down.push(round(size / 1e6 / ((performance.now() - t0) / 1000)))
    if (got !== size || h.digest('hex') !== sum) throw new Error('the download differs from the upload')
  }
  await sbx.kill()
  report('upload', TEMPLATE, up, 'MB/s')
  report('download', TEMPLATE, down, 'MB/s')
} else {
  throw new Error(`MODE is create, run or transfer, not ${MODE}`)
}
