#!/bin/bash
# The built-in app template: Python holding a 64 MiB heap, answering through the gateway.
source "$(dirname "$0")/lib.sh"
warren_start
id=$(create app wait)
out=$(curl -fsS --max-time 20 "$(sb_url "$id")")
expect "app answers with its heap ($out)" grep -q '"heap_mib": 64' <<<"$out"
expect "app knows its sandbox id" grep -q "\"sandbox\": \"$id\"" <<<"$out"
out=$(curl -fsS --max-time 20 "$(sb_url "$id")touch")
expect "app touches its heap ($out)" grep -q '"touched_mib": 64' <<<"$out"
mem=$(sbprop "$id" MemoryCurrent)
expect "MemoryCurrent holds the heap ($((mem >> 20)) MiB)" test "$mem" -gt $((64 << 20))
