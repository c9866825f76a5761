// SDK Sandbox.create -> first commands.run result, through Warren's E2B API and gateway, with
// the published e2b SDK (tests/e2b). Env: E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY (as any E2B
// client), TEMPLATES (comma list, each "label=template"), N (runs per template, default 10).
// Prints one JSON line per template: {label, template, n, p50_ms, p90_ms, samples_ms}.
// the SDK installed by tests/e2b (npm ci there), pinned by its package-lock.json
const { Sandbox } = await import(new URL('../tests/e2b/node_modules/e2b/dist/index.mjs', import.meta.url))

const N = Number(process.env.N || 10)
const templates = (process.env.TEMPLATES || 'cold=base').split(',').map((t) => t.split('='))
const pct = (v, p) => {
  const s = [...v].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]
}
for (const [label, template] of templates) {
  const samples = []
  for (let i = 0; i < N; i++) {
    const t0 = performance.now()
    const sbx = await Sandbox.create(template, { timeoutMs: 120_000 })
    const r = await sbx.commands.run('true')
    const t1 = performance.now()
    if (r.exitCode !== 0) throw new Error(`commands.run('true') exited ${r.exitCode}`)
    samples.push(Math.round((t1 - t0) * 10) / 10)
    await sbx.kill()
  }
  console.log(JSON.stringify({ label, template, n: N, p50_ms: pct(samples, 50), p90_ms: pct(samples, 90), samples_ms: samples }))
}
