#!/bin/bash
# Install what Warren needs (Debian packages only), build it, install it under /usr/local, and
# create its users, directories and D-Bus policy. Idempotent; run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake pkg-config libevent-dev libseccomp-dev libcap-ng-dev
	libprotobuf-c-dev protobuf-c-compiler libzstd-dev libsystemd-dev libcmocka-dev libmnl-dev
	runsc nftables busybox-static debootstrap dbus systemd conntrack iproute2 curl python3
	valgrind procps util-linux netcat-openbsd clang clang-format libclang-rt-14-dev libglib2.0-bin
	qemu-system-x86 linux-image-cloud-amd64 cpio lz4 e2fsprogs libjansson-dev libssl-dev libxxhash-dev nodejs skopeo umoci prometheus nginx-light wrk
	etcd-server etcd-client systemd-container)

if [ "$(id -u)" != 0 ]; then
	echo "setup.sh: run as root" >&2
	exit 1
fi
missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "==> Installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# npm for the E2B tests (tests/e2b): a nodejs that bundles it (NodeSource's) conflicts with
# Debian's npm package, so that package is installed only when no npm is there
if ! command -v npm >/dev/null; then
	echo "==> Installing npm"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm >/dev/null
fi

echo "==> Building"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" 2>&1 | grep -E "error|warning" || true
cmake --build build -j"$(nproc)" >/dev/null
cmake --install build --prefix /usr/local >/dev/null
install -m 0755 scripts/warren-launch scripts/warren-template-build scripts/warren-vm-image \
	/usr/local/bin/
install -d /usr/local/share/warren/templates
cp -r templates/web templates/app /usr/local/share/warren/templates/

getent group warren >/dev/null || groupadd --system warren
getent passwd warren >/dev/null ||
	useradd --system --gid warren --home-dir /var/lib/warren --no-create-home \
		--shell /usr/sbin/nologin --comment "Warren supervisor" warren
getent group warren-gateway >/dev/null || groupadd --system warren-gateway
getent passwd warren-gateway >/dev/null ||
	useradd --system --gid warren-gateway --home-dir /nonexistent --no-create-home \
		--shell /usr/sbin/nologin --comment "Warren gateway" warren-gateway
# the E2B control plane (warren-e2b-api): a D-Bus client of the supervisor; the bus policy names
# this user, and the API key file is root:warren-e2b 0640
getent group warren-e2b >/dev/null || groupadd --system warren-e2b
getent passwd warren-e2b >/dev/null ||
	useradd --system --gid warren-e2b --home-dir /nonexistent --no-create-home \
		--shell /usr/sbin/nologin --comment "Warren E2B API" warren-e2b
# the cluster daemon (warren-clusterd, docs/MULTIHOST.md): a D-Bus client of the supervisor; the
# bus policy names this user, and the cluster key file is root:warren-cluster 0640
getent group warren-cluster >/dev/null || groupadd --system warren-cluster
getent passwd warren-cluster >/dev/null ||
	useradd --system --gid warren-cluster --home-dir /nonexistent --no-create-home \
		--shell /usr/sbin/nologin --comment "Warren cluster daemon" warren-cluster
# the microVM backend's VMM drops to this user once its files are open
getent group warren-vm >/dev/null || groupadd --system warren-vm
getent passwd warren-vm >/dev/null ||
	useradd --system --gid warren-vm --home-dir /nonexistent --no-create-home \
		--shell /usr/sbin/nologin --comment "Warren microVM monitors" warren-vm
# Firecracker starts as warren-vm (it has no -runas) and needs /dev/kvm
getent group kvm >/dev/null && usermod -aG kvm warren-vm
# the two privileged helpers switch to their own users after start-up, keeping only the
# capabilities listed in their *-lockdown.c (docs/ARCHITECTURE.md)
for u in netnsd snapshotd; do
	getent group warren-$u >/dev/null || groupadd --system warren-$u
	getent passwd warren-$u >/dev/null ||
		useradd --system --gid warren-$u --home-dir /nonexistent --no-create-home \
			--shell /usr/sbin/nologin --comment "Warren $u helper" warren-$u
done
# warren-importd unpacks OCI images as this user, with no privilege (importd/import-stage.c)
getent group warren-import >/dev/null || groupadd --system warren-import
getent passwd warren-import >/dev/null ||
	useradd --system --gid warren-import --home-dir /nonexistent --no-create-home \
		--shell /usr/sbin/nologin --comment "Warren OCI image unpacker" warren-import
install -d -m 0755 /var/lib/warren /var/lib/warren/templates /var/lib/warren/vm /run/warren
install -d -m 0711 /var/lib/warren/import
install -d -m 0700 -o warren -g warren /var/lib/warren/state
install -d -m 0700 -o warren-e2b -g warren-e2b /var/lib/warren/e2b
install -d -m 0755 /etc/warren
# snapshotd's store and reclaim swap file, its own (images written before 0.3 were root's)
install -d -m 0700 -o warren-snapshotd -g warren-snapshotd /var/lib/warren/images \
	/var/lib/warren/reclaim
chown -R warren-snapshotd:warren-snapshotd /var/lib/warren/images
install -D -m 0644 units/org.warren.Warren1.conf /etc/dbus-1/system.d/org.warren.Warren1.conf
# bus activation through systemd, only where systemd runs: without it the bus would run Exec=
# (nothing) for every call made while the supervisor is down, and warren-launch starts it anyway
if [ -d /run/systemd/system ]; then
	install -D -m 0644 units/org.warren.Warren1.dbus-service \
		/usr/local/share/dbus-1/system-services/org.warren.Warren1.service
fi
install -d /usr/local/lib/systemd/system /usr/local/lib/sysusers.d /usr/local/lib/tmpfiles.d
install -m 0644 units/*.service units/*.socket /usr/local/lib/systemd/system/
install -m 0644 units/warren.sysusers.conf /usr/local/lib/sysusers.d/warren.conf
install -m 0644 units/warren.tmpfiles.conf /usr/local/lib/tmpfiles.d/warren.conf
install -d /usr/local/share/doc/warren
cp docs/*.md /usr/local/share/doc/warren/ 2>/dev/null || true
echo "==> Installed Warren $(grep -m1 -o 'project(warren VERSION [0-9.]*' CMakeLists.txt | cut -d' ' -f3)"
