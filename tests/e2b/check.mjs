// What the E2B test scripts check with: ok prints "ok: WHAT" or "FAIL: WHAT: detail" and exits 1
// at the first failure (the shell test reads the lines); until retries a check every 250 ms.
export function ok(what, cond, detail) {
  if (!cond) {
    console.log(`FAIL: ${what}${detail !== undefined ? ': ' + JSON.stringify(detail) : ''}`)
    process.exit(1)
  }
  console.log(`ok: ${what}`)
}
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
export async function until(what, secs, fn) {
  const end = Date.now() + secs * 1000
  for (;;) {
    let last
    try { if (await fn()) return ok(what, true) } catch (e) { last = e }
    if (Date.now() > end) return ok(what, false, String(last))
    await sleep(250)
  }
}
