#!/bin/bash
# Warm templates: the first create of a warm template starts cold and Warren takes the
# template's image (tag warm-<name>) from a sandbox of its own; later creates restore it.
source "$(dirname "$0")/lib.sh"
warren_start
mgr AddTemplate ssasqta{sv} -- warmweb /var/lib/warren/templates/web/rootfs 7 /bin/busybox httpd -f -p 8080 -h /www 8080 67108864 1 warm b true
a=$(create warmweb wait)
expect "the first create starts cold" test -z "$(sbprop "$a" Image)"
expect "the warm image appears" wait_for 60 sh -c "busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListTags | grep -q warm-warmweb"
expect "the warming sandbox is gone" wait_for 20 sh -c "[ \$(warrenctl list | grep -c warmweb) = 1 ]"
b=$(create warmweb wait)
expect "the next create restores the warm image" test "$(sbprop "$b" Image)" = warm-warmweb
expect "and answers" sh -c "curl -fsS --max-time 10 $(sb_url "$b") | grep -q Hello"
log "warm create timings: $(busctl --system get-property org.warren.Warren1 /org/warren/Warren1/sandbox/$b org.warren.Warren1.Sandbox Timings)"
expect "warm images are not compressed" sh -c "busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListTags | grep -q '\"warm-warmweb\" \"warmweb\" [0-9]* false'"
warrenctl rmtag warm-warmweb
c=$(create warmweb wait)
expect "without its image a create is cold again" test -z "$(sbprop "$c" Image)"
expect "and the image is taken again" wait_for 60 sh -c "busctl --system call org.warren.Warren1 /org/warren/Warren1 org.warren.Warren1.Manager ListTags | grep -q warm-warmweb"
