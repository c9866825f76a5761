#!/bin/bash
# Warren's whole test suite on a fresh Debian 12 machine, as root: install and build (setup.sh),
# build the web, app and base templates once (cached), then run every unit and integration test with
# ctest. Integration tests start their own dbus-daemon and daemons beside any running Warren.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
warren-template-build web
warren-template-build app
# E2B's default template (a copy of app's debootstrap tree)
warren-template-build base
cd build
ctest --output-on-failure --timeout 600 "$@"
